/**
 * @module The audit log of everything that changes who can do what (docs/http-api.md, audit log):
 * logins, users, tokens and devices; `GET /v1/audit/events` takes and answers these. The
 * remote-access audit (`GET /v1/audit/remote-access`) is `./sessions.ts`.
 */
import { z } from 'zod';
import { dateTimeParam, named, pagingParams, timestamp } from './common';

/** Every event the log records, by family (`login.`, `user.`, `token.`, `device.`, `policy.` (access policies), `webhook.`). */
export const AUDIT_LOG_EVENTS = [
  'login.succeeded',
  'login.failed',
  'user.created',
  'user.role_changed',
  'user.disabled',
  'user.enabled',
  'user.deleted',
  'user.password_changed',
  'token.created',
  'token.revoked',
  'device.created',
  'device.deleted',
  'device.token_rotated',
  'policy.created',
  'policy.deleted',
  'webhook.created',
  'webhook.deleted',
] as const;
export type AuditLogEventName = (typeof AUDIT_LOG_EVENTS)[number];

/** The families: an `event` filter ending in `.` matches every event of one. */
export const AUDIT_LOG_FAMILIES = [...new Set(AUDIT_LOG_EVENTS.map((e) => `${e.split('.')[0]}.`))];

/** What an event is about. */
export const AUDIT_TARGET_KINDS = ['user', 'token', 'device', 'policy', 'webhook'] as const;
export type AuditTargetKind = (typeof AUDIT_TARGET_KINDS)[number];

export const AUDIT_OUTCOMES = ['success', 'failure'] as const;
export type AuditOutcome = (typeof AUDIT_OUTCOMES)[number];

/** The actor of a failed password login: nobody proved who they are (no username may take this name). */
export const ANONYMOUS_ACTOR = 'anonymous';

// Requests

const eventFilter = z
  .string()
  .max(64)
  .refine((e) => (AUDIT_LOG_EVENTS as readonly string[]).includes(e) || AUDIT_LOG_FAMILIES.includes(e), {
    message: `must be an event (${AUDIT_LOG_EVENTS.join(', ')}) or a family ending in "." (${AUDIT_LOG_FAMILIES.join(', ')})`,
  });

export const auditLogQuery = z
  .strictObject({
    ...pagingParams(200, 50),
    event: eventFilter.optional().describe('an event, or a family ending in "." (`user.`)'),
    actor: z.string().min(1).max(254).optional(),
    target: z.string().min(1).max(300).optional().describe('an id (`ann`, `tok_…`, `cam-7`), or KIND:ID (`user:ann`) for one kind only'),
    since: dateTimeParam.optional().describe('events at or after this time'),
    until: dateTimeParam.optional().describe('events before this time'),
  })
  .refine((q) => q.since === undefined || q.until === undefined || q.since < q.until, { path: ['until'], message: 'must be after since' });
export type AuditLogQuery = z.infer<typeof auditLogQuery>;

// Responses

export const auditLogEvent = named(
  'AuditLogEvent',
  z.strictObject({
    id: z.int(),
    event: z.enum(AUDIT_LOG_EVENTS),
    actor: z.string().describe(`who acted: a username, \`system\`, or \`${ANONYMOUS_ACTOR}\` for a failed password login`),
    target: z.strictObject({ kind: z.enum(AUDIT_TARGET_KINDS), id: z.string() }),
    details: z.record(z.string(), z.unknown()).describe('what changed; never a secret'),
    outcome: z.enum(AUDIT_OUTCOMES),
    at: timestamp,
    trace_id: z.string(),
    source_ip: z.string().nullable().describe('the address the request came from (behind a proxy: the proxy’s); null when the platform acted'),
    count: z.int().min(1).describe('how many times it happened: failed logins of one username from one address within a minute are one event'),
    last_at: timestamp.nullable().describe('when it happened last, if more than once'),
  }),
);
export type AuditLogEvent = z.infer<typeof auditLogEvent>;
