/**
 * @module The client's HTTP calls, with the seed's client handling (7.1): on 429 it waits the
 * `Retry-After` it was given and tries again (saying so); on 500 it shows the request id;
 * every other error becomes a CliError with the server's message.
 */
import { CliError } from './errors';

export interface ApiErrorBody {
  error: string;
  message: string;
  status: number;
  details?: Array<{ path: string; message: string }>;
}

/** A response the caller may want to handle itself (409, 422 ...). */
export class ApiFailure extends CliError {
  constructor(
    readonly status: number,
    readonly body: ApiErrorBody,
    readonly requestId: string | null,
  ) {
    super(body.message);
  }
}

export interface ApiClient {
  server: string;
  request<T = any>(method: string, path: string, body?: unknown): Promise<T>;
}

export interface ApiOptions {
  server: string;
  token?: string | undefined;
  /** Where notices go (stderr). */
  notice?: (line: string) => void;
  maxRateLimitRetries?: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function createApi(options: ApiOptions): ApiClient {
  const notice = options.notice ?? ((line: string) => process.stderr.write(`${line}\n`));
  const maxRetries = options.maxRateLimitRetries ?? 5;

  async function request<T>(method: string, path: string, body?: unknown): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      let res: Response;
      try {
        res = await fetch(`${options.server}${path}`, {
          method,
          headers: {
            ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
            ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
      } catch (err) {
        const cause = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).message;
        throw new CliError(`cannot reach ${options.server}: ${cause}`);
      }
      const text = await res.text();
      let parsed: any;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {
        throw new CliError(`unexpected answer from ${options.server} (HTTP ${res.status}); is it a tether server?`);
      }
      if (res.ok) return parsed?.data as T;
      const requestId = res.headers.get('x-request-id');
      const errorBody: ApiErrorBody = parsed?.error
        ? parsed
        : { error: 'unknown', message: `HTTP ${res.status}`, status: res.status };
      if (res.status === 429 && attempt < maxRetries) {
        const wait = Math.max(1, Number(res.headers.get('retry-after')) || 1);
        notice(`rate limited by the server; waiting ${wait} s before trying again`);
        await sleep(wait * 1000);
        continue;
      }
      if (res.status === 401) {
        throw new CliError(`${errorBody.message}. Log in again with \`tether login\`, or check TETHER_TOKEN.`);
      }
      if (res.status >= 500) {
        throw new CliError(
          `the server failed (HTTP ${res.status}, request id ${requestId ?? 'unknown'}). Try again in about 30 s; if it persists, report the request id.`,
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
