/**
 * @module The fleet interface's success envelope (docs/http-api.md, fleet groups):
 * `{status: "success", data, timestamp, request_id}`. Its errors are written by the error
 * middleware in the fleet dialect (api/http/error-body.ts), as `shared/api/errors.ts` says.
 */
import type { Context } from 'koa';

/** Answers with the fleet success envelope; `T` is the type of `data` from `shared/api/fleet.ts`. */
export function success<T>(ctx: Context, data: T, status = 200): void {
  ctx.status = status;
  ctx.body = { status: 'success', data, timestamp: new Date().toISOString(), request_id: ctx.state.requestId };
}
