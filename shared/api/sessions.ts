/**
 * @module Remote-access sessions over HTTP (docs/http-api.md, sessions): what opening, listing and
 * reading a session take and answer, the `recording` part of a session record and what reading a
 * recording takes, and the remote-access audit. Who holds a session in the way of an open is the
 * `holder` of the 409 body (`./errors`).
 */
import { z } from 'zod';
import { closeReasonSchema, SESSION_PROTOCOLS } from '../protocol/control-channel';
import { formatTarget, MAX_TARGETS, parseTarget } from '../protocol/port-forward/targets';
import type { ErrorCode } from './errors';
import { count, dateTimeParam, named, pagingParams, timestamp } from './common';
import { ACCESS_EVENTS } from './access';

export const TTL_MIN_S = 60;
/** Also the longest a session may live in all, extends included (from `opened_at` to `expires_at`). */
export const TTL_MAX_S = 28800;
/** A session's TTL when the open names none. */
export const TTL_DEFAULT_S = 3600;

/**
 * `session.joined`: someone other than its owner (an administrator) connected to a session's
 * stream. `session.extended`: its end moved; `reason` is the new `expires_at`. `job.*`: a job
 * (CONTRACT 10.2) was created, canceled, aborted (`reason`: why) or completed; these name `job_id`
 * and no session, device or protocol. `access_request.*`: an access request (CONTRACT 10.3) was
 * created, approved, denied, canceled, expired or revoked; these name `request_id` and `device_id`.
 */
export const AUDIT_EVENTS = [
  'session.opened',
  'session.closed',
  'session.expired',
  'session.joined',
  'session.extended',
  'recording.viewed',
  'job.created',
  'job.canceled',
  'job.aborted',
  'job.completed',
  ...ACCESS_EVENTS,
] as const;
export type AuditEventName = (typeof AUDIT_EVENTS)[number];

/**
 * The codes these operations answer with besides those every operation may (docs/http-api.md,
 * errors); a `conflict` on opening carries `holder`.
 */
export const SESSION_ERRORS = [
  'forbidden',
  'not_found',
  'conflict',
  'unprocessable_entity',
  'target_not_allowed',
  'rate_limited',
  'unavailable',
] as const satisfies readonly ErrorCode[];
export type SessionErrorCode = (typeof SESSION_ERRORS)[number];

// Requests

/** `HOST:PORT`, turned canonical (`shared/protocol/port-forward/targets.ts`). */
const forwardTarget = z
  .string()
  .max(300)
  .transform((text, ctx) => {
    const parsed = parseTarget(text);
    if (parsed.ok) return formatTarget(parsed.value);
    ctx.addIssue({ code: 'custom', message: parsed.problem });
    return z.NEVER;
  });

export const openSessionBody = z
  .strictObject({
    device_id: z.string().min(1).max(64),
    protocol: z.enum(SESSION_PROTOCOLS),
    ttl_seconds: z.number().int().min(TTL_MIN_S).max(TTL_MAX_S).optional(),
    targets: z.array(forwardTarget).min(1).max(MAX_TARGETS).optional(),
  })
  .superRefine((body, ctx) => {
    if (body.protocol === 'port-forward' && !body.targets) {
      ctx.addIssue({ code: 'custom', path: ['targets'], message: `is required for a port-forward session: 1 to ${MAX_TARGETS} "HOST:PORT"` });
    }
    if (body.protocol !== 'port-forward' && body.targets) {
      ctx.addIssue({ code: 'custom', path: ['targets'], message: 'only a port-forward session has targets' });
    }
  })
  // The same target named twice (perhaps spelled differently) is one target.
  .transform((body) => (body.targets ? { ...body, targets: [...new Set(body.targets)] } : body));
/** What `POST /v1/remote-access/sessions` takes. */
export type OpenSessionBody = z.input<typeof openSessionBody>;

/**
 * What `POST /v1/remote-access/sessions/{id}/extend` takes: the session then ends `ttl_seconds`
 * from now, as long as its whole life stays within TTL_MAX_S.
 */
export const extendSessionBody = z.strictObject({
  ttl_seconds: z.number().int().min(TTL_MIN_S).max(TTL_MAX_S).describe('the session ends this many seconds from now'),
});
export type ExtendSessionBody = z.input<typeof extendSessionBody>;

export const sessionListQuery = z.strictObject({
  ...pagingParams(200, 50),
  device_id: z.string().min(1).max(64).optional(),
  protocol: z.enum(SESSION_PROTOCOLS).optional(),
  status: z.enum(['open', 'closed']).optional(),
  since: dateTimeParam.optional(),
  has_recording: z
    .enum(['true', 'false'], { error: 'must be true or false' })
    .transform((v) => v === 'true')
    .optional(),
});

export const sessionAuditQuery = z.strictObject({
  ...pagingParams(200, 50),
  session_id: z.string().min(1).max(64).optional(),
  device_id: z.string().min(1).max(64).optional(),
  job_id: z.string().min(1).max(64).optional(),
  event: z.enum(AUDIT_EVENTS).optional(),
  actor: z.string().min(1).max(254).optional(),
  since: dateTimeParam.optional(),
});

/** `GET /v1/remote-access/sessions/{id}/recording`: asciicast v2, or its output as plain text. */
export const recordingQuery = z.strictObject({
  format: z.enum(['cast', 'text'], { error: 'must be cast or text' }).default('cast'),
});

// Responses

/** A session's recording as its record shows it. */
export const recording = named(
  'Recording',
  z.strictObject({
    bytes: count.describe('size of the asciicast GET …/recording answers with'),
    sha256: z.string(),
    duration_s: z.number().min(0),
    truncated: z.boolean(),
    stored_bytes: count.describe('size of the compressed file'),
    input: z.boolean().describe('whether keystrokes are recorded'),
    in_progress: z.boolean(),
  }),
);
export type Recording = z.infer<typeof recording>;

export const session = named(
  'Session',
  z.strictObject({
    session_id: z.string(),
    device_id: z.string(),
    protocol: z.enum(SESSION_PROTOCOLS),
    status: z.enum(['open', 'closed']),
    ttl_seconds: z.int().describe('its whole life in seconds, from opened_at to expires_at (an extend changes it)'),
    opened_by: z.string(),
    opened_at: timestamp,
    expires_at: timestamp,
    closed_at: timestamp.nullable(),
    close_reason: z.nullable(closeReasonSchema),
    websocket_url: z
      .string()
      .optional()
      .describe(
        'the stream with its ticket, bound to the token that asked: while the session is open, for its owner and administrators with scope sessions:write; ' +
          'absent otherwise (a closed session’s record never carries one)',
      ),
    bytes_to_device: count,
    bytes_from_device: count,
    trace_id: z.string(),
    targets: z.array(z.string()).optional().describe('a port-forward session’s targets, canonical HOST:PORT'),
    access_request_id: z.string().optional().describe('the access grant it was opened under (docs/access.md); absent when no access policy applied'),
    recording: recording.nullable(),
  }),
);
export type Session = z.infer<typeof session>;

export const auditEvent = named(
  'AuditEvent',
  z.strictObject({
    id: z.int(),
    event: z.enum(AUDIT_EVENTS),
    session_id: z.string().nullable().describe('null for job and access events'),
    device_id: z.string().nullable().describe('null for job events'),
    protocol: z.enum(SESSION_PROTOCOLS).nullable().describe('null for job and access events'),
    actor: z.string(),
    reason: z.string().nullable(),
    at: timestamp,
    trace_id: z.string(),
    targets: z.array(z.string()).optional(),
    job_id: z.string().optional().describe('the job of a job.* event'),
    request_id: z.string().optional().describe('the access request of an access_request.* event'),
  }),
);
export type AuditEvent = z.infer<typeof auditEvent>;
