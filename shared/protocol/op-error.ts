/**
 * @module The one error of the request/response ops of a session stream (diagnostics and
 * file-transfer, docs/session-streams.md): a code from the protocol's catalogue (`OP_ERRORS` in
 * ./session-stream) and a message for people. The device throws it, and so do the file
 * operations it runs (confined paths, tar extraction); it answers `{code, message}`.
 */
import type { OpErrorCode } from './session-stream';

/** How a message names the files root; the device writes the root's path and its own name there. */
export const FILES_ROOT = 'the files root';

export class OpError extends Error {
  override readonly name = 'OpError';
  /** The message says FILES_ROOT where the root belongs (otherwise the device names it after the message). */
  readonly namesRoot: boolean;

  constructor(
    readonly code: OpErrorCode,
    message: string,
    options: { namesRoot?: boolean } = {},
  ) {
    super(message);
    this.namesRoot = options.namesRoot ?? false;
  }
}
