/**
 * @module Error bodies as named schemas, one per status and dialect, each naming exactly the codes
 * that status can carry (api/errors.ts and api/fleet/errors.ts are the catalogues): `Error404` is
 * `{error: "not_found", message, status: 404}`, `FleetError404` the fleet dialect's
 * `{status: "error", error: {code: "NOT_FOUND" | "GROUP_NOT_FOUND" | …}, timestamp, request_id}`.
 */
import { z } from 'zod';
import { ERROR_CODES } from '../errors';
import { FLEET_ERRORS } from '../fleet/errors';
import { named, sessionHolder, timestamp } from './models';

/** Codes of the retries-and-concurrency contract (CONTRACT §9), named before every route answers with them. */
const RETRY_CODES: Record<string, number> = { idempotency_key_reused: 422, precondition_failed: 412 };
const FLEET_RETRY_CODES: Record<string, number> = { IDEMPOTENCY_KEY_REUSED: 422, CONFLICT: 409, PRECONDITION_FAILED: 412 };

export const CONTRACT_CODES: Readonly<Record<string, number>> = { ...RETRY_CODES, ...ERROR_CODES };
export const FLEET_CODES: Readonly<Record<string, number>> = { ...FLEET_RETRY_CODES, ...FLEET_ERRORS };

export type Dialect = 'contract' | 'fleet';

const detail = named(
  'ErrorDetail',
  z.strictObject({
    path: z.string().describe('the field, written a.b[0].c'),
    message: z.string(),
    line: z.int().min(1).optional().describe('the YAML line (service specs)'),
  }),
);

function codesOf(catalogue: Readonly<Record<string, number>>, status?: number): [string, ...string[]] {
  const codes = Object.keys(catalogue).filter((code) => status === undefined || catalogue[code] === status);
  if (codes.length === 0) throw new Error(`no error code has status ${status}`);
  return codes.sort() as [string, ...string[]];
}

function contractError(status?: number) {
  return z.strictObject({
    error: z.enum(codesOf(CONTRACT_CODES, status)),
    message: z.string(),
    status: status === undefined ? z.int().min(400).max(599) : z.literal(status),
    details: z.array(detail).optional(),
    // Opening a session the one-session-per-protocol rule refuses: whose session is in the way.
    ...((status === undefined || status === 409) && {
      holder: sessionHolder.optional().describe('on opening a session (409): who holds the open one of that protocol, and since when'),
    }),
  });
}

function fleetError(status?: number) {
  return z.strictObject({
    status: z.literal('error'),
    error: z.strictObject({ code: z.enum(codesOf(FLEET_CODES, status)), message: z.string(), details: z.array(detail).optional() }),
    timestamp,
    request_id: z.string(),
  });
}

/** Any error of the dialect: what an unknown path answers with. */
export const anyError = { contract: named('Error', contractError()), fleet: named('FleetError', fleetError()) } as const;

const byStatus = new Map<string, z.ZodType>();

/** The error body of `status` in `dialect`, registered once as `Error<status>` / `FleetError<status>`. */
export function errorBody(dialect: Dialect, status: number): z.ZodType {
  const id = `${dialect === 'fleet' ? 'FleetError' : 'Error'}${status}`;
  let schema = byStatus.get(id);
  if (!schema) {
    schema = named(id, dialect === 'fleet' ? fleetError(status) : contractError(status));
    byStatus.set(id, schema);
  }
  return schema;
}

/** The statuses that some code of the dialect carries. */
export const errorStatuses = (dialect: Dialect): number[] =>
  [...new Set(Object.values(dialect === 'fleet' ? FLEET_CODES : CONTRACT_CODES))].sort((a, b) => a - b);
