/**
 * @module The device registry and agent presence over HTTP (docs/http-api.md, endpoints): what
 * each request takes and what each answers.
 */
import { z } from 'zod';
import type { ErrorCode } from './errors';
import { named, pagingParams, timestamp } from './common';

export const DEVICE_ID_PATTERN = /^[A-Za-z0-9._-]{1,64}$/;
export const deviceIdSchema = z.string().regex(DEVICE_ID_PATTERN, 'must be 1-64 characters of [A-Za-z0-9._-]');

/** The codes these operations answer with besides those every operation may (docs/http-api.md, errors). */
export const DEVICE_ERRORS = ['forbidden', 'not_found', 'conflict', 'precondition_failed', 'rate_limited'] as const satisfies readonly ErrorCode[];

// Requests

export const newDeviceBody = z.strictObject({
  device_id: deviceIdSchema,
  labels: z
    .record(z.string().min(1).max(64), z.string().max(256))
    .refine((l) => Object.keys(l).length <= 64, 'at most 64 labels')
    .optional(),
});

export const deviceListQuery = z.strictObject({
  ...pagingParams(200, 50),
  agent_status: z.enum(['online', 'offline']).optional(),
});

// Responses

const agentStatus = z.enum(['online', 'offline']);
const agentToken = z.string().describe('the device’s agent token, shown this once');

export const device = named(
  'Device',
  z.strictObject({
    device_id: z.string(),
    agent_status: agentStatus,
    last_seen_at: timestamp.nullable(),
    labels: z.record(z.string(), z.string()),
    agent_version: z.string().nullable(),
    created_at: timestamp,
    forward_allow: z.array(z.string()).nullable().describe('the port-forward patterns its agent announced; null: it does not forward ports'),
  }),
);
export type Device = z.infer<typeof device>;

/** A device just registered, with its agent token (shown this once). */
export const deviceCreated = z.strictObject({ device_id: z.string(), agent_status: z.literal('offline'), agent_token: agentToken });
export type DeviceCreated = z.infer<typeof deviceCreated>;

export const agentStatusView = z.strictObject({ device_id: z.string(), agent_status: z.enum(['online', 'offline']), last_seen_at: timestamp.nullable() });
export type AgentStatusView = z.infer<typeof agentStatusView>;

export const deviceDeleted = z.strictObject({ device_id: z.string(), deleted: z.literal(true), sessions_closed: z.int().min(0) });
export type DeviceDeleted = z.infer<typeof deviceDeleted>;

/** A device's new agent token. */
export const agentTokenIssued = z.strictObject({ device_id: z.string(), agent_token: agentToken });
export type AgentTokenIssued = z.infer<typeof agentTokenIssued>;
