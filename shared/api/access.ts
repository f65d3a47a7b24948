/**
 * @module Access requests (CONTRACT 10.3; docs/access.md): policies that name the devices (by
 * labels) and protocols that need an approved request, the requests themselves (a reason, a
 * device, protocols, a duration), their review by another administrator, and the grant that runs
 * from approval. `/v1/access-policies` and `/v1/access-requests` take and answer these; the CLI
 * and the console read them from here too.
 */
import { z } from 'zod';
import { SESSION_PROTOCOLS } from '../protocol/control-channel';
import { dateTimeParam, named, pagingParams, timestamp } from './common';
import type { ErrorCode } from './errors';

export const ACCESS_LIMITS = {
  /** A policy's `max_duration_seconds`: bounds and default. */
  maxDurationSeconds: { min: 60, max: 604_800, default: 3600 },
  /** A request's `duration_seconds`: at least this, at most its policy's maximum (the default). */
  minDurationSeconds: 60,
  reasonChars: { min: 1, max: 500 },
  /** How long a request stays pending before it ends `expired` (TETHER_ACCESS_REQUEST_TTL_SECONDS). */
  pendingTtlSecondsDefault: 86_400,
  policyNameChars: { min: 1, max: 100 },
} as const;

export const ACCESS_REQUEST_STATUSES = ['pending', 'approved', 'denied', 'canceled', 'expired', 'revoked', 'ended'] as const;
export type AccessRequestStatus = (typeof ACCESS_REQUEST_STATUSES)[number];

/** Audit events (the remote-access audit, `GET /v1/audit/remote-access`) and event-stream events of requests. */
export const ACCESS_EVENTS = [
  'access_request.created',
  'access_request.approved',
  'access_request.denied',
  'access_request.canceled',
  'access_request.expired',
  'access_request.revoked',
] as const;
export type AccessEventName = (typeof ACCESS_EVENTS)[number];

/** The codes these operations answer with besides those every operation may. */
export const ACCESS_ERRORS = ['forbidden', 'not_found', 'conflict', 'unprocessable_entity', 'self_review_forbidden'] as const satisfies readonly ErrorCode[];

// Requests

const labels = z.record(z.string().min(1).max(63), z.string().max(63)).refine((l) => Object.keys(l).length > 0, 'must name at least one label');
const protocols = z
  .array(z.enum(SESSION_PROTOCOLS))
  .min(1)
  .max(SESSION_PROTOCOLS.length)
  .transform((p) => [...new Set(p)]);
const reason = z.string().trim().min(ACCESS_LIMITS.reasonChars.min).max(ACCESS_LIMITS.reasonChars.max);

export const createPolicyBody = z.strictObject({
  name: z.string().trim().min(ACCESS_LIMITS.policyNameChars.min).max(ACCESS_LIMITS.policyNameChars.max),
  match: z.strictObject({ labels }),
  protocols,
  max_duration_seconds: z.number().int().min(ACCESS_LIMITS.maxDurationSeconds.min).max(ACCESS_LIMITS.maxDurationSeconds.max).optional(),
});
export type CreatePolicyBody = z.infer<typeof createPolicyBody>;

export const createRequestBody = z.strictObject({
  device_id: z.string().min(1).max(64),
  protocols,
  reason,
  duration_seconds: z
    .number()
    .int()
    .min(ACCESS_LIMITS.minDurationSeconds)
    .max(ACCESS_LIMITS.maxDurationSeconds.max)
    .optional()
    .describe('up to the matching policies’ maximum (the smallest, when several match); default that maximum'),
});
export type CreateRequestBody = z.infer<typeof createRequestBody>;

/** `approve`, `deny`: why. `revoke`: why (optional). */
export const reviewBody = z.strictObject({ reason });
export const revokeBody = z.strictObject({ reason: reason.optional() });

export const requestsQuery = z.strictObject({
  ...pagingParams(200, 50),
  status: z.enum(ACCESS_REQUEST_STATUSES).optional(),
  device_id: z.string().min(1).max(64).optional(),
  requester: z.string().min(1).max(254).optional(),
  since: dateTimeParam.optional(),
});
export const policiesQuery = z.strictObject({ ...pagingParams(200, 50) });

// Responses

export const accessPolicy = named(
  'AccessPolicy',
  z.strictObject({
    policy_id: z.string().describe('apol_…'),
    name: z.string(),
    match: z.strictObject({ labels: z.record(z.string(), z.string()) }),
    protocols: z.array(z.enum(SESSION_PROTOCOLS)),
    max_duration_seconds: z.int(),
    created_by: z.string(),
    created_at: timestamp,
  }),
);
export type AccessPolicy = z.infer<typeof accessPolicy>;

export const accessRequest = named(
  'AccessRequest',
  z.strictObject({
    request_id: z.string().describe('areq_…'),
    status: z.enum(ACCESS_REQUEST_STATUSES),
    requester: z.string(),
    device_id: z.string(),
    protocols: z.array(z.enum(SESSION_PROTOCOLS)),
    reason: z.string(),
    duration_seconds: z.int(),
    created_at: timestamp,
    expires_at: timestamp.describe('when it ends `expired` if nobody reviewed it'),
    reviewed_by: z.string().nullable(),
    review_reason: z.string().nullable(),
    reviewed_at: timestamp.nullable(),
    starts_at: timestamp.nullable().describe('approval: the grant starts'),
    ends_at: timestamp.nullable().describe('starts_at + duration_seconds: the grant and its sessions end'),
    revoked_by: z.string().nullable(),
    revoke_reason: z.string().nullable(),
    revoked_at: timestamp.nullable(),
  }),
);
export type AccessRequest = z.infer<typeof accessRequest>;

/** What the error of a session refused for want of a grant carries besides its message: how to ask (its `details`). */
export { accessRequiredDetail, type AccessRequiredDetail } from './access-detail';
