/**
 * @module An error as the path it answers names it (docs/http-api.md, errors): `{error, message,
 * status, details?, holder?}`, or on the fleet interface's paths `{status: "error", error: {code,
 * message, details?}, timestamp, request_id}`, with the code the fleet catalogue gives it. Both
 * dialects and the mapping between them are data (`shared/api/errors.ts`); which one a path speaks
 * is decided there too. A fleet interface's own code on another path is a bug: it is answered as
 * a 500 (the caller logs it).
 */
import { dialectOf, FLEET_CODE_OF, FLEET_ERRORS, isFleetCode, type ErrorBody, type FleetErrorBody } from '../../shared/api/errors';
import { ApiError } from '../errors';

/** The 500 of an unexpected error: its message names the request id, nothing else. */
export const internalError = (requestId: string) => new ApiError('internal_error', `internal error. Request ID: ${requestId}`);

/** True when `err` is an error of the fleet interface's own catalogue met on another path. */
export const misplaced = (path: string, err: ApiError): boolean => isFleetCode(err.code) && dialectOf(path) !== 'fleet';

function contractBody(err: ApiError, requestId: string): { status: number; body: ErrorBody } {
  const e = isFleetCode(err.code) ? internalError(requestId) : err;
  const body: ErrorBody = { error: e.code as ErrorBody['error'], message: e.message, status: e.status };
  if (e.details) body.details = e.details;
  if (e.holder) body.holder = e.holder;
  // Its 403 body's `details` may be this object (shared/api/errors.ts); ErrorBody types the array only.
  if (e.accessRequired) (body as { details?: unknown }).details = e.accessRequired;
  return { status: e.status, body };
}

function fleetBody(err: ApiError, requestId: string): { status: number; body: FleetErrorBody } {
  const code = isFleetCode(err.code) ? err.code : FLEET_CODE_OF[err.code];
  return {
    status: FLEET_ERRORS[code],
    body: {
      status: 'error',
      error: { code, message: err.message, ...(err.details ? { details: err.details } : {}) },
      timestamp: new Date().toISOString(),
      request_id: requestId,
    },
  };
}

/** Status and body of `err` on `path` (anything but an ApiError is a 500 naming only the request id). */
export function renderError(path: string, err: unknown, requestId: string): { status: number; body: ErrorBody | FleetErrorBody } {
  const e = err instanceof ApiError ? err : internalError(requestId);
  return dialectOf(path) === 'fleet' ? fleetBody(e, requestId) : contractBody(e, requestId);
}
