/** @module The client's one error type: a message for people and the exit code (1 failure, 2 usage). */

export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: 1 | 2 = 1,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

export const usageError = (message: string) => new CliError(message, 2);
