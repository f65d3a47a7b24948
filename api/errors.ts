/**
 * @module The one error type of the session, deployment and identity interfaces, and the
 * catalogue of its codes (docs/http-api.md, errors). Handlers throw `ApiError`; the error middleware
 * renders `{error, message, status, details?}`. Anything else becomes a 500 whose message carries
 * only the request id, never internals.
 */

export const ERROR_CODES = {
  bad_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  /** A stale `If-Match`: the resource changed since the caller read it. */
  precondition_failed: 412,
  request_timeout: 408,
  payload_too_large: 413,
  unsupported_media_type: 415,
  unprocessable_entity: 422,
  invalid_spec: 422,
  target_not_allowed: 422,
  /** An `Idempotency-Key` sent again with another request. */
  idempotency_key_reused: 422,
  rate_limited: 429,
  internal_error: 500,
  /** A cluster's control node cannot reach its bus (NATS): nothing can reach the devices now. */
  unavailable: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

export interface ErrorDetail {
  path: string;
  message: string;
  line?: number;
}

export class ApiError extends Error {
  readonly status: number;

  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: ErrorDetail[],
    /** Extra response headers, e.g. `Retry-After`. */
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.name = 'ApiError';
    this.status = ERROR_CODES[code];
  }
}

export const badRequest = (message: string, details?: ErrorDetail[]) => new ApiError('bad_request', message, details);
export const unauthorized = (message = 'missing, malformed, expired or revoked bearer token') =>
  new ApiError('unauthorized', message);
export const forbidden = (message: string) => new ApiError('forbidden', message);
export const notFound = (message: string) => new ApiError('not_found', message);
export const conflict = (message: string) => new ApiError('conflict', message);
