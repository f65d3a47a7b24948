/**
 * @module The fleet interface's one error type and its catalogue (docs/http-api.md, errors), and how the errors
 * of shared middleware (authentication, body limits) are named on fleet paths.
 */
import { ApiError, type ErrorDetail } from '../errors';

export const FLEET_ERRORS = {
  MISSING_REQUIRED_FIELD: 400,
  VALIDATION_ERROR: 400,
  MISSING_TENANT_ID: 400,
  UNAUTHORIZED: 401,
  INSUFFICIENT_SCOPE: 403,
  TENANT_FORBIDDEN: 403,
  NOT_FOUND: 404,
  REQUEST_TIMEOUT: 408,
  GROUP_NOT_FOUND: 404,
  VEHICLE_NOT_FOUND: 404,
  GROUP_NAME_CONFLICT: 409,
  VEHICLE_CONFLICT: 409,
  /** A request with the same `Idempotency-Key` is still being handled. */
  CONFLICT: 409,
  PRECONDITION_FAILED: 412,
  IDEMPOTENCY_KEY_REUSED: 422,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  RATE_LIMITED: 429,
  INTERNAL_ERROR: 500,
} as const;

export type FleetCode = keyof typeof FLEET_ERRORS;

export class FleetError extends Error {
  readonly status: number;

  constructor(
    readonly code: FleetCode,
    message: string,
    readonly details?: ErrorDetail[],
  ) {
    super(message);
    this.name = 'FleetError';
    this.status = FLEET_ERRORS[code];
  }
}

const FROM_API: Record<ApiError['code'], FleetCode> = {
  bad_request: 'VALIDATION_ERROR',
  unauthorized: 'UNAUTHORIZED',
  forbidden: 'INSUFFICIENT_SCOPE',
  not_found: 'NOT_FOUND',
  conflict: 'CONFLICT',
  request_timeout: 'REQUEST_TIMEOUT',
  payload_too_large: 'PAYLOAD_TOO_LARGE',
  unsupported_media_type: 'UNSUPPORTED_MEDIA_TYPE',
  unprocessable_entity: 'VALIDATION_ERROR',
  invalid_spec: 'VALIDATION_ERROR',
  target_not_allowed: 'VALIDATION_ERROR',
  precondition_failed: 'PRECONDITION_FAILED',
  idempotency_key_reused: 'IDEMPOTENCY_KEY_REUSED',
  rate_limited: 'RATE_LIMITED',
  internal_error: 'INTERNAL_ERROR',
  unavailable: 'INTERNAL_ERROR', // never met on a fleet path: fleet groups do not reach devices
};

/** An error met on a fleet path, as the fleet interface names it. */
export function asFleetError(err: ApiError | FleetError): FleetError {
  return err instanceof FleetError ? err : new FleetError(FROM_API[err.code], err.message, err.details);
}

/** Paths of the fleet interface (routes match case-insensitively, so does this). */
export const isFleetPath = (path: string) => /^\/v1\/fleet(\/|$)/i.test(path);
