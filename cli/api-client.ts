/**
 * @module The client's HTTP calls to the tether API: on 429 it waits the `Retry-After` it was
 * given and tries again (saying so); on 500 it shows the request id; every other error becomes a
 * CliError carrying the API's error code and message (docs/http-api.md, errors), in either
 * dialect: the API's `{error, message}` or the fleet interface's `{status: "error", error: {code, message}}`.
 * What the API answers is typed from `shared/api/` (types only: none of it is in the bundle).
 *
 * On `node:http` rather than `fetch`: the first `fetch` of a process loads undici, about 20 ms
 * of every command's start-up (BENCHMARKS.md, command start-up).
 */
import { Agent as HttpAgent, request as httpRequest, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import * as z from 'zod/mini';
import type { ErrorBody, ErrorCode, FleetCode } from '../shared/api/errors';
import { sessionHolderSchema } from '../shared/api/session-holder';
import { CliError } from './errors';

/** A code the API answers with, in either dialect; `unknown` when an answer holds none. */
export type ApiErrorCode = ErrorCode | FleetCode | 'unknown';

/** The API's error body, `{error, message, status, details?, holder?}`, a fleet error's code in `error`. */
export type ApiErrorBody = Omit<ErrorBody, 'error'> & { error: ApiErrorCode };

const problemsSchema = z.optional(z.array(z.object({ path: z.string(), message: z.string(), line: z.optional(z.number()) })));
// `details` is a list of problems on a 400, but other errors carry an object of their own (a 403
// `access_request_required`: how to ask): such an answer keeps its code and message.
const errorBodySchema = z.object({ error: z.string(), message: z.string(), details: z.optional(z.unknown()), holder: z.optional(sessionHolderSchema) });
/** The fleet interface's errors (docs/http-api.md, fleet groups). */
const fleetErrorSchema = z.object({
  status: z.literal('error'),
  error: z.object({ code: z.string(), message: z.string(), details: problemsSchema }),
});

/**
 * A response the caller may want to handle itself (401, 409, 422 ...); `code` is the API's
 * `error`, `body.message` the server's words, `message` those words with the client's advice.
 */
export class ApiFailure extends CliError {
  declare readonly code: ApiErrorCode;

  constructor(
    readonly status: number,
    readonly body: ApiErrorBody,
    readonly requestId: string | null,
    message = body.message,
  ) {
    super(message, body.error);
  }
}

/** How a request goes beyond a JSON body. */
export interface RequestOptions {
  /** More request headers (the fleet interface's `X-Tenant-ID`). */
  headers?: Record<string, string>;
  /** Send `body`, a string, as it is with this content type instead of as JSON (a YAML spec). */
  contentType?: string;
}

export interface ApiClient {
  server: string;
  /** The `data` of the answer; rejects with a CliError (an ApiFailure for a 4xx). */
  request<T = unknown>(method: string, path: string, body?: unknown, options?: RequestOptions): Promise<T>;
  /** A GET whose answer is not JSON (a recording): the response, to read as a stream; errors as `request`. */
  stream(path: string): Promise<IncomingMessage>;
}

export interface ApiClientOptions {
  server: string;
  token?: string | undefined;
  /** Where notices go (stderr). */
  notice?: (line: string) => void;
  maxRateLimitRetries?: number;
  /** Give up on a request that has no answer after this long (it fails as `unreachable`). */
  timeoutMs?: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The error body of a failed answer, in one shape for both dialects, or one made up from its
 * status when it has none. Its code is the server's word, taken as one of the catalogue's.
 */
function errorBodyOf(parsed: unknown, status: number): ApiErrorBody {
  const body = errorBodySchema.safeParse(parsed);
  if (body.success) {
    const { details, ...rest } = body.data;
    const problems = problemsSchema.safeParse(details);
    return { ...rest, error: body.data.error as ApiErrorCode, status, ...(problems.success && problems.data ? { details: problems.data } : {}) };
  }
  const fleet = fleetErrorSchema.safeParse(parsed);
  if (fleet.success) {
    const { code, message, details } = fleet.data.error;
    return { error: code as ApiErrorCode, message, status, ...(details ? { details } : {}) };
  }
  return { error: 'unknown', message: `HTTP ${status}`, status };
}

const header = (headers: IncomingHttpHeaders, name: string): string | null => {
  const value = headers[name];
  return (Array.isArray(value) ? value[0] : value) ?? null;
};

/** A response's whole body as text; rejects with `fail`'s error if the connection is cut meanwhile. */
function readAll(res: IncomingMessage, fail: (why: string) => Error): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    res.on('data', (chunk: Buffer) => chunks.push(chunk));
    res.on('error', () => {}); // 'close' says what happened
    res.on('close', () => (res.complete ? resolve(Buffer.concat(chunks).toString('utf8')) : reject(fail('the connection was cut during the answer'))));
  });
}

export function createApiClient(options: ApiClientOptions): ApiClient {
  const notice = options.notice ?? ((line: string) => process.stderr.write(`${line}\n`));
  const maxRetries = options.maxRateLimitRetries ?? 5;
  const base = URL.canParse(options.server) ? new URL(options.server) : undefined;
  const secure = base?.protocol === 'https:';
  // Kept-alive sockets are unreferenced while idle, so they never hold a command open.
  const agent = secure ? new HttpsAgent({ keepAlive: true }) : new HttpAgent({ keepAlive: true });

  const unreachable = (why: string) => new CliError(`cannot reach ${options.server}: ${why}`, 'unreachable');

  /** Sends one request; resolves once the answer's status and headers are in. */
  function sendOnce(method: string, path: string, body: unknown, requestOptions: RequestOptions): Promise<IncomingMessage> {
    const payload = body === undefined ? undefined : requestOptions.contentType ? String(body) : JSON.stringify(body);
    return new Promise<IncomingMessage>((resolve, reject) => {
      if (!base || (base.protocol !== 'http:' && base.protocol !== 'https:')) return reject(unreachable('not an http:// or https:// URL'));
      const req = (secure ? httpsRequest : httpRequest)(
        new URL(`${base.pathname.replace(/\/+$/, '')}${path}`, base),
        {
          method,
          agent,
          headers: {
            ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
            ...requestOptions.headers,
            ...(payload === undefined
              ? {}
              : { 'content-type': requestOptions.contentType ?? 'application/json', 'content-length': Buffer.byteLength(payload) }),
          },
        },
        (res) => {
          clearTimeout(timer);
          resolve(res);
        },
      );
      // Until the answer starts, connect included, as AbortSignal.timeout did for fetch.
      const timer = options.timeoutMs
        ? setTimeout(() => req.destroy(Object.assign(new Error('timed out'), { code: 'timed out' })), options.timeoutMs)
        : undefined;
      req.on('error', (err: NodeJS.ErrnoException) => {
        clearTimeout(timer);
        reject(unreachable(err.code ?? err.message));
      });
      req.end(payload);
    });
  }

  /**
   * Sends a request until it is not rate limited; resolves with a 2xx answer (its body unread),
   * rejects with the CliError of any other.
   */
  async function send(method: string, path: string, body: unknown, requestOptions: RequestOptions = {}): Promise<IncomingMessage> {
    for (let attempt = 0; ; attempt++) {
      const res = await sendOnce(method, path, body, requestOptions);
      const status = res.statusCode ?? 0;
      if (status >= 200 && status < 300) return res;
      const text = await readAll(res, unreachable);
      let parsed: unknown;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {
        throw new CliError(`unexpected answer from ${options.server} (HTTP ${status}); is it a tether server?`, 'bad_answer');
      }
      const requestId = header(res.headers, 'x-request-id');
      const errorBody = errorBodyOf(parsed, status);
      if (status === 429 && attempt < maxRetries) {
        const wait = Math.max(1, Number(header(res.headers, 'retry-after')) || 1);
        notice(`rate limited by the server; waiting ${wait} s before trying again`);
        await sleep(wait * 1000);
        continue;
      }
      if (status === 401) {
        throw new ApiFailure(status, errorBody, requestId, `${errorBody.message}. Log in again with \`tether login\`, or check TETHER_TOKEN.`);
      }
      if (status >= 500) {
        throw new CliError(
          `the server failed (HTTP ${status}, request id ${requestId ?? 'unknown'}). Try again in about 30 s; if it persists, report the request id.`,
          errorBody.error,
        );
      }
      if (status === 400 && errorBody.details?.length) {
        const lines = errorBody.details.map((d) => `  ${d.path}: ${d.message}`).join('\n');
        throw new ApiFailure(status, { ...errorBody, message: `invalid request:\n${lines}` }, requestId);
      }
      throw new ApiFailure(status, errorBody, requestId);
    }
  }

  async function request<T>(method: string, path: string, body?: unknown, requestOptions?: RequestOptions): Promise<T> {
    const res = await send(method, path, body, requestOptions);
    const text = await readAll(res, unreachable);
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      throw new CliError(`unexpected answer from ${options.server} (HTTP ${res.statusCode}); is it a tether server?`, 'bad_answer');
    }
    return (parsed as { data?: T } | undefined)?.data as T;
  }

  return { server: options.server, request, stream: (path: string) => send('GET', path, undefined) };
}

/**
 * An action whose API failures end with their code, `(not_found)`, `(GROUP_NOT_FOUND)`: the code
 * is what scripts and the docs go by (docs/http-api.md, errors; docs/cli.md, conventions). The
 * client's own failures say what they need to in their words.
 */
export function withCode<A extends unknown[], R>(action: (...args: A) => Promise<R>) {
  return async function actionWithCode(...args: A): Promise<R> {
    try {
      return await action(...args);
    } catch (err) {
      if (!(err instanceof ApiFailure) || err.code === 'unknown') throw err;
      // `invalid request (bad_request):` above the lines of its problems.
      const [first = '', ...rest] = err.message.split('\n');
      const said = first.endsWith(':') ? `${first.slice(0, -1)} (${err.code}):` : `${first} (${err.code})`;
      throw new CliError([said, ...rest].join('\n'), err.code);
    }
  };
}

/**
 * `GET path`'s data as the server has it now, for a command that waits on something and reads it
 * again: a failure that may pass (unreachable, a 5xx) is returned, not thrown; an API failure
 * (a 4xx) is thrown.
 */
export async function readOrPassingFailure<T>(api: ApiClient, path: string): Promise<T | CliError> {
  try {
    return await api.request<T>('GET', path);
  } catch (err) {
    if (err instanceof ApiFailure || !(err instanceof CliError)) throw err;
    return err;
  }
}

/**
 * Every page of a list the API answers as an array: `pageUrl` is the path of one page, given its
 * `page` and `per_page` parameters (pages of `perPage` items, until one comes back short).
 */
export async function allPages<T>(api: ApiClient, pageUrl: (paging: { page: string; per_page: string }) => string, perPage = 200): Promise<T[]> {
  const items: T[] = [];
  for (let page = 1; ; page++) {
    const batch = await api.request<T[]>('GET', pageUrl({ page: String(page), per_page: String(perPage) }));
    items.push(...batch);
    if (batch.length < perPage) return items;
  }
}
