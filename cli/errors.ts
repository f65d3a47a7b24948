/**
 * @module The client's one error type: a message for people and a code for the program. A usage
 * mistake exits 2, every other failure 1 (docs/cli.md, exit codes).
 */

/**
 * The codes of failures the client finds itself. A failure the server reports keeps the API's
 * `error` code (`not_found`, `conflict` …; docs/http-api.md, errors); one the device reports keeps
 * its op error code (`not_found`, `path_outside_root` …; docs/session-streams.md, what the device
 * guarantees).
 */
export type LocalErrorCode =
  /** A mistake in the command line: exit code 2. */
  | 'usage'
  /** The server or the session's stream cannot be reached. */
  | 'unreachable'
  /** The server or the device answered something this client does not understand. */
  | 'bad_answer'
  /** No server or no token is configured. */
  | 'not_logged_in'
  /** The stored config cannot be read, or its token expired. */
  | 'bad_config'
  /** The session's stream closed before the work was done. */
  | 'stream_closed'
  /** What arrived is not what was sent. */
  | 'mismatch'
  /** Something waited for did not happen in time. */
  | 'timeout'
  /** The user cancelled. */
  | 'cancelled'
  /** A new password typed twice was not the same twice. */
  | 'not_confirmed'
  /** A local file or directory is missing or of the wrong kind. */
  | 'local_file'
  /** A local port cannot be listened on (in use, not permitted). */
  | 'local_port';

export class CliError extends Error {
  /**
   * @param code a {@link LocalErrorCode}, or the code the server or the device answered with
   */
  constructor(
    message: string,
    readonly code: LocalErrorCode | (string & {}),
  ) {
    super(message);
    this.name = 'CliError';
  }

  /** The process exit code this failure ends the command with. */
  get exitCode(): 1 | 2 {
    return this.code === 'usage' ? 2 : 1;
  }
}

export const usageError = (message: string): CliError => new CliError(message, 'usage');
