/**
 * @module The fleet interface's envelope (docs/http-api.md, fleet groups): successes as
 * `{status: "success", data, timestamp, request_id}`, and its error dialect, which writes every
 * error on a fleet path, its own or one raised by shared middleware (authentication, body limits,
 * parser rejections), as `{status: "error", error: {code, message, details?}, timestamp, request_id}`.
 */
import type { Context } from 'koa';
import { ApiError } from '../errors';
import type { ErrorDialect } from '../http/error-handler';
import { asFleetError, FleetError, isFleetPath } from './errors';

/** Answers with the fleet success envelope. */
export function success(ctx: Context, data: unknown, status = 200): void {
  ctx.status = status;
  ctx.body = { status: 'success', data, timestamp: new Date().toISOString(), request_id: ctx.state.requestId };
}

/** Registered with the error handler for the fleet paths. */
export const fleetErrorDialect: ErrorDialect = {
  owns: isFleetPath,
  isOwnError: (err) => err instanceof FleetError,
  render(err, requestId) {
    const fleet = err instanceof FleetError ? err : err instanceof ApiError ? asFleetError(err) : new FleetError('INTERNAL_ERROR', `internal error. Request ID: ${requestId}`);
    return {
      status: fleet.status,
      body: {
        status: 'error',
        error: { code: fleet.code, message: fleet.message, ...(fleet.details ? { details: fleet.details } : {}) },
        timestamp: new Date().toISOString(),
        request_id: requestId,
      },
    };
  },
};
