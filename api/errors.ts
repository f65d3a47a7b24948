/**
 * @module The one error type of the API. Handlers throw `ApiError` with a code of the catalogue
 * (`shared/api/errors.ts`): a code of every interface (`not_found`), or one of the fleet
 * interface's own (`GROUP_NOT_FOUND`); the error middleware writes it in the dialect of the path
 * (api/http/error-body.ts). Anything else becomes a 500 whose message carries only the request id,
 * never internals.
 */
import { statusOf, type ErrorCode, type ErrorDetail, type FleetCode, type SessionHolder } from '../shared/api/errors';
import type { AccessRequiredDetail } from '../shared/api/access-detail';

export type { ErrorDetail } from '../shared/api/errors';

/** What some errors add to their body besides code, message and details. */
export interface ErrorExtras {
  /** A 409 on opening a session: who holds the open one of that protocol (`holder`). */
  holder?: SessionHolder | undefined;
  /** A 403 `access_request_required`: how to ask (answered as `details`). */
  accessRequired?: AccessRequiredDetail | undefined;
}

export class ApiError extends Error {
  readonly status: number;
  /** A 409 on opening a session: who holds the open one of that protocol. */
  readonly holder: SessionHolder | undefined;
  /** A 403 `access_request_required`: how to ask. */
  readonly accessRequired: AccessRequiredDetail | undefined;

  constructor(
    readonly code: ErrorCode | FleetCode,
    message: string,
    readonly details?: ErrorDetail[],
    /** Extra response headers, e.g. `Retry-After`. */
    readonly headers?: Record<string, string>,
    extras: ErrorExtras = {},
  ) {
    super(message);
    this.name = 'ApiError';
    this.status = statusOf(code);
    this.holder = extras.holder;
    this.accessRequired = extras.accessRequired;
  }
}

export const badRequest = (message: string, details?: ErrorDetail[]) => new ApiError('bad_request', message, details);
export const unauthorized = (message = 'missing, malformed, expired or revoked bearer token') => new ApiError('unauthorized', message);
export const forbidden = (message: string) => new ApiError('forbidden', message);
export const notFound = (message: string) => new ApiError('not_found', message);
export const conflict = (message: string) => new ApiError('conflict', message);
