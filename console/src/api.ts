/**
 * @module The console's calls to the tether API, with the signed-in token in the Authorization
 * header (never in a URL). Errors keep the API's code and message. What the API answers is typed
 * from `shared/api/` (types only: none of it is in the bundle).
 */
import type { ListMeta } from '../../shared/api/common';
import type { ErrorBody, SessionHolder } from '../../shared/api/errors';
import { token } from './auth';

/** The API's code, or the console's own when there is no answer (`unreachable`) or no error body in it (`unknown`). */
export type ErrorCode = ErrorBody['error'] | 'unreachable' | 'unknown' | (string & {});

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    /** A 409 on opening a session: who holds the open one of that protocol. */
    readonly holder?: SessionHolder,
  ) {
    super(message);
  }
}

/** An error of the fleet interface, whose codes are its own (`GROUP_NOT_FOUND` …). */
interface FleetErrorBody {
  status: 'error';
  error: { code: string; message: string };
}

/** Called when the token stops working (401): the console signs out. */
let onUnauthorized: () => void = () => {};
export const whenUnauthorized = (f: () => void) => void (onUnauthorized = f);

async function send(method: string, path: string, body?: unknown, auth = true, extra: Record<string, string> = {}): Promise<Response> {
  const headers: Record<string, string> = { ...extra };
  const t = token();
  if (auth && t) headers.authorization = `Bearer ${t}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  let res: Response;
  try {
    res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  } catch {
    throw new ApiError(0, 'unreachable', 'the server cannot be reached');
  }
  if (res.ok) return res;
  let code: ErrorCode = 'unknown';
  let message = `HTTP ${res.status}`;
  let holder: SessionHolder | undefined;
  try {
    const err = (await res.json()) as Partial<ErrorBody> | FleetErrorBody;
    if (typeof err.error === 'object') {
      // The fleet interface's own shape: {status: "error", error: {code, message}}.
      code = err.error.code as ErrorCode;
      message = err.error.message;
    } else {
      code = err.error ?? code;
      message = err.message ?? message;
    }
    if ('holder' in err && typeof err.holder?.opened_by === 'string' && typeof err.holder.opened_at === 'string') holder = err.holder;
  } catch {
    // not the API's error body
  }
  if (res.status === 401 && auth) onUnauthorized();
  throw new ApiError(res.status, code, message, holder);
}

/** The `data` of a JSON answer. */
export async function api<T = unknown>(method: string, path: string, body?: unknown, auth = true): Promise<T> {
  const res = await send(method, path, body, auth);
  // 204 (a policy or a webhook deleted) has no body to read.
  if (res.status === 204) return undefined as T;
  return ((await res.json()) as { data: T }).data;
}

/** The `data` of a fleet answer: every fleet request names its tenant (`X-Tenant-ID`). */
export async function apiFleet<T = unknown>(method: string, path: string, tenant: string, body?: unknown): Promise<T> {
  const res = await send(method, path, body, true, { 'x-tenant-id': tenant });
  return ((await res.json()) as { data: T }).data;
}

/** The `data` and `meta` of a list. */
export async function apiList<T>(path: string): Promise<{ data: T[]; meta: ListMeta }> {
  const res = await send('GET', path);
  return (await res.json()) as { data: T[]; meta: ListMeta };
}

/** A text answer (a recording). */
export async function apiText(path: string): Promise<string> {
  return (await send('GET', path)).text();
}

/** A streamed answer (server-sent events). */
export const apiStream = (path: string, signal: AbortSignal): Promise<Response> =>
  fetch(path, { headers: { authorization: `Bearer ${token()}`, accept: 'text/event-stream' }, signal });
