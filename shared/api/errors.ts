/**
 * @module The one catalogue of HTTP error codes (docs/http-api.md, errors), as data: each code
 * with its status, in the two dialects the API speaks. Every path answers
 * `{error, message, status, details?}` (and `holder` on a 409 of opening a session), except the
 * fleet interface's (`/v1/fleet/…`), which answers `{status: "error", error: {code, message,
 * details?}, timestamp, request_id}` with codes of its own; how a code of the first names itself
 * on a fleet path is data too (`FLEET_CODE_OF`). The body schemas are here, per status for the
 * OpenAPI document.
 */
import { z } from 'zod';
import { named, timestamp } from './common';
import { accessRequiredDetail } from './access-detail';

export const ERROR_CODES = {
  bad_request: 400,
  unauthorized: 401,
  forbidden: 403,
  /** A policy needs an approved access request of the caller for this device and protocol (docs/access.md). */
  access_request_required: 403,
  /** An administrator may not approve or deny their own access request. */
  self_review_forbidden: 403,
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

/** The fleet interface's codes. */
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
  /** The database did not answer (peers on PostgreSQL, docs/peers.md); `Retry-After` says when to try again. */
  SERVICE_UNAVAILABLE: 503,
} as const;
export type FleetCode = keyof typeof FLEET_ERRORS;

/** How an error of the shared middleware (authentication, body limits, retries) is named on a fleet path. */
export const FLEET_CODE_OF: Readonly<Record<ErrorCode, FleetCode>> = {
  bad_request: 'VALIDATION_ERROR',
  unauthorized: 'UNAUTHORIZED',
  forbidden: 'INSUFFICIENT_SCOPE',
  access_request_required: 'INSUFFICIENT_SCOPE',
  self_review_forbidden: 'INSUFFICIENT_SCOPE',
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
  unavailable: 'SERVICE_UNAVAILABLE', // the database did not answer
};

/** Which shape a path's errors take: `fleet` for the fleet interface, `contract` for every other. */
export type Dialect = 'contract' | 'fleet';

/** Paths of the fleet interface (routes match case-insensitively, so does this). */
export const isFleetPath = (path: string): boolean => /^\/v1\/fleet(\/|$)/i.test(path);
export const dialectOf = (path: string): Dialect => (isFleetPath(path) ? 'fleet' : 'contract');

/** True for a code of the fleet interface's own catalogue. */
export const isFleetCode = (code: string): code is FleetCode => Object.hasOwn(FLEET_ERRORS, code);

/** The status `code` answers with, in whichever catalogue it is. */
export const statusOf = (code: ErrorCode | FleetCode): number => (isFleetCode(code) ? FLEET_ERRORS[code] : ERROR_CODES[code]);

// Bodies

/** Who holds a device's open session of a protocol: the `holder` of a 409 on opening one. */
export const sessionHolder = named(
  'SessionHolder',
  z.strictObject({
    opened_by: z.string().describe('the username of its owner'),
    opened_at: timestamp,
  }),
);
export type SessionHolder = z.infer<typeof sessionHolder>;

export const errorDetail = named(
  'ErrorDetail',
  z.strictObject({
    path: z.string().describe('the field, written a.b[0].c'),
    message: z.string(),
    line: z.int().min(1).optional().describe('the YAML line (service specs)'),
  }),
);
export type ErrorDetail = z.infer<typeof errorDetail>;

/** The codes of `catalogue` that answer with `status` (all of them without one), sorted. */
function codesOf<C extends string>(catalogue: Readonly<Record<C, number>>, status?: number): [C, ...C[]] {
  const codes = (Object.keys(catalogue) as C[]).filter((code) => status === undefined || catalogue[code] === status);
  if (codes.length === 0) throw new Error(`no error code has status ${status}`);
  return codes.sort() as [C, ...C[]];
}

function contractFields(status?: number) {
  return {
    error: z.enum(codesOf(ERROR_CODES, status)),
    message: z.string(),
    status: status === undefined ? z.int().min(400).max(599) : z.literal(status),
    details: z.array(errorDetail).optional(),
  };
}

/** Opening a session the one-session-per-protocol rule refuses (409): whose session is in the way. */
const holderField = () => ({
  holder: sessionHolder.optional().describe('on opening a session (409): who holds the open one of that protocol, and since when'),
});

/** `{error, message, status, details?}` (and `holder?` on a 409): an error of `status` on every path but the fleet interface's. */
export function contractErrorBody(status: number) {
  if (status === 409) return z.strictObject({ ...contractFields(status), ...holderField() });
  // A 403 `access_request_required` says how to ask in its `details` (./access-detail.ts).
  if (status === 403) return z.strictObject({ ...contractFields(status), details: z.union([z.array(errorDetail), accessRequiredDetail]).optional() });
  return z.strictObject(contractFields(status));
}

/** `{status: "error", error: {code, message, details?}, timestamp, request_id}`: an error of the fleet interface. */
export function fleetErrorBody(status?: number) {
  return z.strictObject({
    status: z.literal('error'),
    error: z.strictObject({ code: z.enum(codesOf(FLEET_ERRORS, status)), message: z.string(), details: z.array(errorDetail).optional() }),
    timestamp,
    request_id: z.string(),
  });
}

/** Any error of each dialect: what an unknown path answers with. */
export const anyError = {
  contract: named('Error', z.strictObject({ ...contractFields(), ...holderField() })),
  fleet: named('FleetError', fleetErrorBody()),
} as const;

/** The error body of every path but the fleet interface's. */
export type ErrorBody = z.infer<typeof anyError.contract>;
/** The fleet interface's error body. */
export type FleetErrorBody = z.infer<typeof anyError.fleet>;
