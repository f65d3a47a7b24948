/**
 * @module The client's HTTP calls to the tether API: on 429 it waits the `Retry-After` it was
 * given and tries again (saying so); on 500 it shows the request id; every other error becomes a
 * CliError carrying the API's error code and message (docs/http-api.md, errors).
 */
import { z } from 'zod';
import type { Problem } from '../shared/zod-issues';
import { CliError } from './errors';

/** The API's error body: `{error, message, status, details?}`. */
export interface ApiErrorBody {
  error: string;
  message: string;
  status: number;
  details?: Problem[];
}

const errorBodySchema = z.object({
  error: z.string(),
  message: z.string(),
  details: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
});

/**
 * A response the caller may want to handle itself (401, 409, 422 ...); `code` is the API's
 * `error`, `body.message` the server's words, `message` those words with the client's advice.
 */
export class ApiFailure extends CliError {
  constructor(
    readonly status: number,
    readonly body: ApiErrorBody,
    readonly requestId: string | null,
    message = body.message,
  ) {
    super(message, body.error);
  }
}

export interface ApiClient {
  server: string;
  /** The `data` of the answer; rejects with a CliError (an ApiFailure for a 4xx). */
  request<T = unknown>(method: string, path: string, body?: unknown): Promise<T>;
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

/** The error body of a failed answer, or one made up from its status when it has none. */
function errorBodyOf(parsed: unknown, status: number): ApiErrorBody {
  const body = errorBodySchema.safeParse(parsed);
  if (!body.success) return { error: 'unknown', message: `HTTP ${status}`, status };
  return { ...body.data, status };
}

export function createApiClient(options: ApiClientOptions): ApiClient {
  const notice = options.notice ?? ((line: string) => process.stderr.write(`${line}\n`));
  const maxRetries = options.maxRateLimitRetries ?? 5;

  async function fetchOnce(method: string, path: string, body: unknown): Promise<Response> {
    try {
      return await fetch(`${options.server}${path}`, {
        method,
        headers: {
          ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        ...(options.timeoutMs ? { signal: AbortSignal.timeout(options.timeoutMs) } : {}),
      });
    } catch (err) {
      const cause = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).message;
      throw new CliError(`cannot reach ${options.server}: ${cause}`, 'unreachable');
    }
  }

  async function request<T>(method: string, path: string, body?: unknown): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      const res = await fetchOnce(method, path, body);
      const text = await res.text();
      let parsed: unknown;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {
        throw new CliError(`unexpected answer from ${options.server} (HTTP ${res.status}); is it a tether server?`, 'bad_answer');
      }
      if (res.ok) return (parsed as { data?: T } | undefined)?.data as T;
      const requestId = res.headers.get('x-request-id');
      const errorBody = errorBodyOf(parsed, res.status);
      if (res.status === 429 && attempt < maxRetries) {
        const wait = Math.max(1, Number(res.headers.get('retry-after')) || 1);
        notice(`rate limited by the server; waiting ${wait} s before trying again`);
        await sleep(wait * 1000);
        continue;
      }
      if (res.status === 401) {
        throw new ApiFailure(res.status, errorBody, requestId, `${errorBody.message}. Log in again with \`tether login\`, or check TETHER_TOKEN.`);
      }
      if (res.status >= 500) {
        throw new CliError(
          `the server failed (HTTP ${res.status}, request id ${requestId ?? 'unknown'}). Try again in about 30 s; if it persists, report the request id.`,
          errorBody.error,
        );
      }
      if (res.status === 400 && errorBody.details?.length) {
        const lines = errorBody.details.map((d) => `  ${d.path}: ${d.message}`).join('\n');
        throw new ApiFailure(res.status, { ...errorBody, message: `invalid request:\n${lines}` }, requestId);
      }
      throw new ApiFailure(res.status, errorBody, requestId);
    }
  }

  return { server: options.server, request };
}
