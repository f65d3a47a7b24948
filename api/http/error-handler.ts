/**
 * @module Renders errors, logs each request once, and counts it in the metrics by route and
 * status. Errors are written in the documented shape (docs/http-api.md, errors) `{error, message, status, details?}` unless
 * a feature registered an error dialect for its paths (the fleet interface has an envelope of
 * its own): this module knows no feature. Unexpected errors are logged with their stack and
 * answered with a 500 that names only the request id. A request whose client went away before
 * sending all of it is no server error: it is counted and logged with status 499 (nginx's
 * "client closed request"), at debug level and without a stack.
 */
import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Context, Middleware } from 'koa';
import { ApiError } from '../errors';
import type { Logger } from '../../shared/log';
import type { Counter } from '../../shared/metrics';

export interface ErrorBody {
  error: string;
  message: string;
  status: number;
  details?: ApiError['details'];
}

/** How the errors of some paths are written, registered by the feature that owns them. */
export interface ErrorDialect {
  /** True for the paths this dialect writes the errors of. */
  owns(path: string): boolean;
  /** True for the feature's own error type: answered as it says, never as a 500. */
  isOwnError(err: unknown): boolean;
  /** Status and body of an `ApiError` or of one of the feature's own errors. */
  render(err: unknown, requestId: string): { status: number; body: unknown };
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

const internalError = (requestId: string) => new ApiError('internal_error', `internal error. Request ID: ${requestId}`);

/** The documented shape, for every path no dialect owns. */
function renderContract(err: unknown, requestId: string): { status: number; body: ErrorBody } {
  const apiError = err instanceof ApiError ? err : internalError(requestId);
  const body: ErrorBody = { error: apiError.code, message: apiError.message, status: apiError.status };
  if (apiError.details) body.details = apiError.details;
  return { status: apiError.status, body };
}

/** Writes errors with the dialect that owns the path, or in the documented shape. */
export function createErrorRenderer(dialects: readonly ErrorDialect[]) {
  return {
    isKnown: (err: unknown): boolean => err instanceof ApiError || dialects.some((d) => d.isOwnError(err)),
    /** True when a dialect owns the path's errors. */
    owned: (path: string): boolean => dialects.some((d) => d.owns(path)),
    render(path: string, err: unknown, requestId: string): { status: number; body: unknown } {
      const dialect = dialects.find((d) => d.owns(path));
      return dialect ? dialect.render(err, requestId) : renderContract(err, requestId);
    },
  };
}
export type ErrorRenderer = ReturnType<typeof createErrorRenderer>;

export function errorHandler(log: Logger, requests: Counter, errors: ErrorRenderer): Middleware {
  return async function errorHandlerMiddleware(ctx, next) {
    const started = performance.now();
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) {
        throw new ApiError('not_found', `no such endpoint: ${ctx.method} ${ctx.path}`);
      }
    } catch (err) {
      const requestId = ctx.state.requestId as string;
      const known = errors.isKnown(err);
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
      if (err instanceof ApiError) for (const [name, value] of Object.entries(err.headers ?? {})) ctx.set(name, value);
      if (known && !(err instanceof ApiError) && !errors.owned(ctx.path)) {
        // A feature's own error on a path it does not own is a bug: answered as a 500, and said.
        log.error('an error of another interface reached this path', { request_id: requestId, err });
      }
      const { status, body } = errors.render(ctx.path, known ? err : internalError(requestId), requestId);
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
export function parserRejection(errors: ErrorRenderer, err: NodeJS.ErrnoException & { rawPacket?: Buffer }): string {
  const requestId = randomUUID();
  const timedOut = err.code === 'ERR_HTTP_REQUEST_TIMEOUT';
  const message = timedOut
    ? 'the request was not received in time'
    : err.code === 'HPE_HEADER_OVERFLOW'
      ? 'the request line and headers exceed 16 KiB'
      : 'the request is not valid HTTP/1.1';
  const path = /^[A-Z]+ (\/\S*)/.exec(err.rawPacket?.toString('latin1', 0, 256) ?? '')?.[1] ?? '/';
  const { status, body } = errors.render(path, new ApiError(timedOut ? 'request_timeout' : 'bad_request', message), requestId);
  const text = JSON.stringify(body);
  return (
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${Buffer.byteLength(text)}\r\nX-Request-ID: ${requestId}\r\nConnection: close\r\n\r\n${text}`
  );
}
