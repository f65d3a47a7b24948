/**
 * @module The event stream over HTTP (docs/http-api.md, events): what `GET /v1/events` takes,
 * the one-time ticket `POST /v1/events/tickets` answers with, and the events the stream carries
 * (server-sent events: `event: <name>` and `data: <JSON>`).
 */
import { z } from 'zod';
import type { ErrorCode } from './errors';
import { timestamp } from './common';
import { JOB_KINDS, JOB_STATUSES, jobCounts } from './jobs';
import { ACCESS_EVENTS, ACCESS_REQUEST_STATUSES } from './access';

/** The codes these operations answer with besides those every operation may (docs/http-api.md, errors). */
export const EVENT_ERRORS = ['unauthorized', 'forbidden', 'rate_limited'] as const satisfies readonly ErrorCode[];

// Requests

export const streamQuery = z.strictObject({ ticket: z.string().min(1).max(100).optional() });

// Responses

export const eventsTicket = z.strictObject({ ticket: z.string(), expires_at: timestamp });
export type EventsTicket = z.infer<typeof eventsTicket>;

/** An agent came online or went offline. */
export const presenceEvent = z.strictObject({
  event: z.enum(['agent.online', 'agent.offline']),
  data: z.strictObject({ device_id: z.string(), at: z.string() }),
});

/** A session opened or closed (`close_reason` on closing). */
export const sessionEvent = z.strictObject({
  event: z.enum(['session.opened', 'session.closed']),
  data: z.strictObject({
    session_id: z.string(),
    device_id: z.string(),
    protocol: z.string(),
    opened_by: z.string(),
    at: z.string(),
    close_reason: z.string().nullable().optional(),
  }),
});

/**
 * A session ends soon (TETHER_SESSION_WARNINGS: 5 and 1 minute before its `expires_at`, again
 * after an extend); `seconds_left` as of the event.
 */
export const expiringEvent = z.strictObject({
  event: z.literal('session.expiring'),
  data: z.strictObject({
    session_id: z.string(),
    device_id: z.string(),
    protocol: z.string(),
    opened_by: z.string(),
    expires_at: z.string(),
    seconds_left: z.int().min(0),
  }),
});

/**
 * A job changed (docs/jobs.md): created, an execution started or ended, or the job ended
 * (`status` other than `in_progress`). Sent at most about twice a second per job while it runs,
 * and always for its last change; seen by its creator and administrators.
 */
export const jobEvent = z.strictObject({
  event: z.literal('job.updated'),
  data: z.strictObject({
    job_id: z.string(),
    kind: z.enum(JOB_KINDS),
    status: z.enum(JOB_STATUSES),
    created_by: z.string(),
    counts: jobCounts,
    at: z.string(),
  }),
});

/** An access request changed (docs/access.md); seen by its requester and administrators. */
export const accessEvent = z.strictObject({
  event: z.enum(ACCESS_EVENTS),
  data: z.strictObject({
    request_id: z.string(),
    device_id: z.string(),
    requester: z.string(),
    status: z.enum(ACCESS_REQUEST_STATUSES),
    actor: z.string(),
    at: z.string(),
  }),
});

/** What the stream carries, each as `event: <event>` and `data: <data as JSON>`. */
export const serverEvent = z.discriminatedUnion('event', [presenceEvent, sessionEvent, expiringEvent, jobEvent, accessEvent]);
export type ServerEvent = z.infer<typeof serverEvent>;

/** The last event of a stream whose token stopped being valid: `event: end`. */
export const endEvent = z.strictObject({ event: z.literal('end'), data: z.strictObject({ reason: z.string() }) });
export type EndEvent = z.infer<typeof endEvent>;
