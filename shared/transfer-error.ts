/**
 * @module The error of file operations on either end of a transfer: a documented code
 * (`path_outside_root`, `not_found`, `not_a_directory`, `exists`, `too_large`, `io_error`,
 * `bad_params` ...) and a message for people.
 */
export class TransferError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'TransferError';
  }
}
