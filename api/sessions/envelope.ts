/**
 * @module The error dialect of `POST /v1/remote-access/sessions`: the documented shape
 * `{error, message, status, details?}`, and on a 409 of the one-session-per-protocol rule the
 * field `holder: {opened_by, opened_at}`, so clients can tell their own session from another's
 * without reading the message (docs/http-api.md, sessions).
 */
import { ApiError } from '../errors';
import type { ErrorDialect } from '../http/error-handler';
import { SessionHeld } from './sessions';

export const SESSIONS_PATH = '/v1/remote-access/sessions';

export const sessionErrorDialect: ErrorDialect = {
  owns: (path) => path === SESSIONS_PATH,
  // SessionHeld is an ApiError: nothing of its own to admit.
  isOwnError: () => false,
  render(err, requestId) {
    const e = err instanceof ApiError ? err : new ApiError('internal_error', `internal error. Request ID: ${requestId}`);
    return {
      status: e.status,
      body: {
        error: e.code,
        message: e.message,
        status: e.status,
        ...(e.details && { details: e.details }),
        ...(e instanceof SessionHeld && { holder: e.holder }),
      },
    };
  },
};
