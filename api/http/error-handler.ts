/**
 * @module Renders errors, logs each request once, and counts it in the metrics by route and
 * status. Errors are written in the shape of their path (`./error-body`: the documented
 * `{error, message, status, details?}`, or the fleet interface's envelope on its paths).
 * Unexpected errors are logged with their stack and answered with a 500 that names only the
 * request id. A request whose client went away before sending all of it is no server error: it
 * is counted and logged with status 499 (nginx's "client closed request"), at debug level and
 * without a stack.
 */
import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Context, Middleware } from 'koa';
import { ApiError } from '../errors';
import { isDatabaseUnavailable, isUnstorableText } from '../store/errors';
import type { Logger } from '../../shared/log';
import type { Counter } from '../../shared/metrics';
import { internalError, misplaced, renderError } from './error-body';

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

/** What a 503 for an unreachable database asks the client to wait (s). */
const UNAVAILABLE_RETRY_S = 2;

export function errorHandler(log: Logger, requests: Counter): Middleware {
  return async function errorHandlerMiddleware(ctx, next) {
    const started = performance.now();
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) {
        throw new ApiError('not_found', `no such endpoint: ${ctx.method} ${ctx.path}`);
      }
    } catch (thrown) {
      const requestId = ctx.state.requestId as string;
      // PostgreSQL is away (docs/peers.md): a write that failed so was not committed, or not known to be.
      if (isDatabaseUnavailable(thrown)) log.warn('the database did not answer', { request_id: requestId, err: thrown.message });
      const err = isDatabaseUnavailable(thrown)
        ? new ApiError('unavailable', 'the database is unreachable right now; retry shortly', undefined, { 'Retry-After': String(UNAVAILABLE_RETRY_S) })
        : isUnstorableText(thrown)
          ? new ApiError('bad_request', 'the request holds text that cannot be stored (a NUL character, or bytes that are not UTF-8)')
          : thrown;
      const known = err instanceof ApiError;
      if (!known && clientWentAway(ctx)) {
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
      if (!known) log.error('unhandled error', { request_id: requestId, err });
      if (known) for (const [name, value] of Object.entries(err.headers ?? {})) ctx.set(name, value);
      if (known && misplaced(ctx.path, err)) {
        // A fleet interface's own error on another path is a bug: answered as a 500, and said.
        log.error('an error of another interface reached this path', { request_id: requestId, err });
      }
      const { status, body } = renderError(ctx.path, known ? err : internalError(requestId), requestId);
      ctx.status = status;
      ctx.body = body;
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
 * malformed request line, headers over 16 KiB, a client too slow to send its request), written
 * by the dialect of the path on its request line.
 */
export function parserRejection(err: NodeJS.ErrnoException & { rawPacket?: Buffer }): string {
  const requestId = randomUUID();
  const timedOut = err.code === 'ERR_HTTP_REQUEST_TIMEOUT';
  const message = timedOut
    ? 'the request was not received in time'
    : err.code === 'HPE_HEADER_OVERFLOW'
      ? 'the request line and headers exceed 16 KiB'
      : 'the request is not valid HTTP/1.1';
  const path = /^[A-Z]+ (\/\S*)/.exec(err.rawPacket?.toString('latin1', 0, 256) ?? '')?.[1] ?? '/';
  const { status, body } = renderError(path, new ApiError(timedOut ? 'request_timeout' : 'bad_request', message), requestId);
  const text = JSON.stringify(body);
  return (
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${Buffer.byteLength(text)}\r\nX-Request-ID: ${requestId}\r\nConnection: close\r\n\r\n${text}`
  );
}
