/**
 * @module Renders errors as the contract's JSON body, logs each request once, and counts it in
 * the metrics by route and status. Unexpected errors are logged with their stack and answered
 * with a 500 that names only the request id. A request whose client went away before sending all
 * of it is no server error: it is counted and logged with status 499 (nginx's "client closed
 * request"), at info level and without a stack.
 */
import { randomUUID } from 'node:crypto';
import type { Context, Middleware } from 'koa';
import { ApiError } from '../errors';
import { asFleetError, FleetError, isFleetPath } from '../fleet/errors';
import type { Logger } from '../../shared/log';
import type { Counter } from '../../shared/metrics';

export interface ErrorBody {
  error: string;
  message: string;
  status: number;
  details?: ApiError['details'];
}

/** The route template a request matched (never the raw path, to keep metrics bounded). */
export function routeOf(ctx: { _matchedRoute?: string | RegExp; state: { route?: string } }): string {
  const matched = ctx._matchedRoute;
  return ctx.state.route ?? (typeof matched === 'string' ? matched : 'unmatched');
}

/**
 * nginx's "client closed request": never sent (there is nobody to send it to), only counted and
 * logged, so that operators can tell a client that gave up from a server that failed.
 */
const CLIENT_CLOSED_REQUEST = 499;

/**
 * True when the client closed or reset the connection before its request was complete: Node
 * destroys the request stream, and whoever was reading the body gets `aborted` (ECONNRESET).
 */
function clientWentAway(ctx: Context): boolean {
  return ctx.req.destroyed && !ctx.req.complete;
}

export function errorHandler(log: Logger, requests: Counter): Middleware {
  return async function errorHandlerMiddleware(ctx, next) {
    const started = performance.now();
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) {
        throw new ApiError('not_found', `no such endpoint: ${ctx.method} ${ctx.path}`);
      }
    } catch (err) {
      const requestId = ctx.state.requestId as string;
      if (!(err instanceof ApiError || err instanceof FleetError) && clientWentAway(ctx)) {
        // Anyone with a socket can cut a body short at will: an error log or a 5xx here would
        // let them page the operators. Nothing can be answered either; Koa writes nothing to a
        // destroyed socket.
        log.debug('the client closed the connection before its request was complete', {
          request_id: requestId,
          code: (err as NodeJS.ErrnoException).code,
        });
        ctx.status = CLIENT_CLOSED_REQUEST;
        return;
      }
      let known: ApiError | FleetError;
      if (err instanceof ApiError || err instanceof FleetError) {
        known = err;
      } else {
        log.error('unhandled error', { request_id: requestId, err });
        known = new ApiError('internal_error', `internal error. Request ID: ${requestId}`);
      }
      if (known instanceof ApiError) for (const [name, value] of Object.entries(known.headers ?? {})) ctx.set(name, value);
      if (isFleetPath(ctx.path)) {
        // The fleet interface has its own error shape (CONTRACT 6).
        const fleet = asFleetError(known);
        ctx.status = fleet.status;
        ctx.body = {
          status: 'error',
          error: { code: fleet.code, message: fleet.message, ...(fleet.details ? { details: fleet.details } : {}) },
          timestamp: new Date().toISOString(),
          request_id: requestId,
        };
      } else {
        const apiError = known instanceof ApiError ? known : new ApiError('internal_error', `internal error. Request ID: ${requestId}`);
        const body: ErrorBody = { error: apiError.code, message: apiError.message, status: apiError.status };
        if (apiError.details) body.details = apiError.details;
        ctx.status = apiError.status;
        ctx.body = body;
      }
    } finally {
      const route = routeOf(ctx);
      requests.inc({ method: ctx.method, route, status: String(ctx.status) });
      log.info('request', {
        request_id: ctx.state.requestId,
        method: ctx.method,
        route,
        path: ctx.path, // never the query string: it may hold a stream ticket
        status: ctx.status,
        duration_ms: Math.round((performance.now() - started) * 100) / 100,
        user: ctx.state.principal?.username,
      });
    }
  };
}

/**
 * The whole HTTP response to a request Node's parser refused before any handler saw it (a
 * malformed request line, headers over 16 KiB, a client too slow to send its request), in the
 * contract's error shape: the fleet one if the request line names a fleet path.
 */
export function parserRejection(err: NodeJS.ErrnoException & { rawPacket?: Buffer }): string {
  const requestId = randomUUID();
  const timedOut = err.code === 'ERR_HTTP_REQUEST_TIMEOUT';
  const status = timedOut ? 408 : 400;
  const message = timedOut
    ? 'the request was not received in time'
    : err.code === 'HPE_HEADER_OVERFLOW'
      ? 'the request line and headers exceed 16 KiB'
      : 'the request is not valid HTTP/1.1';
  const path = /^[A-Z]+ (\/\S*)/.exec(err.rawPacket?.toString('latin1', 0, 256) ?? '')?.[1] ?? '/';
  const body = JSON.stringify(
    isFleetPath(path)
      ? {
          status: 'error',
          error: { code: timedOut ? 'REQUEST_TIMEOUT' : 'VALIDATION_ERROR', message },
          timestamp: new Date().toISOString(),
          request_id: requestId,
        }
      : { error: timedOut ? 'request_timeout' : 'bad_request', message, status },
  );
  return (
    `HTTP/1.1 ${status} ${timedOut ? 'Request Timeout' : 'Bad Request'}\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\nX-Request-ID: ${requestId}\r\nConnection: close\r\n\r\n${body}`
  );
}
