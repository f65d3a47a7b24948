/**
 * @module The remote-access audit log: append-only events of sessions, jobs and access requests,
 * newest first when listed. A session event names its session, device and protocol; a job event
 * its `job_id`; an access event its `request_id` and device.
 */
import type { ExpressionBuilder } from 'kysely';
import { atomically, type Executor, type NewRow, type Schema } from './schema';
import { enqueueDeliveries, remoteAccessData } from './webhook-outbox';
import type { SessionProtocol } from '../../shared/protocol/control-channel';

/** `session.joined`: someone other than its owner (an administrator) connected to a session's stream. */
import type { AuditEventName } from '../../shared/api/sessions';
import type { AccessEventName } from '../../shared/api/access';

export { AUDIT_EVENTS, type AuditEventName } from '../../shared/api/sessions';

export interface AuditEvent {
  id: number;
  event: AuditEventName;
  /** Null for job events. */
  session_id: string | null;
  device_id: string | null;
  protocol: SessionProtocol | null;
  /** Who acted: a username (for `session.joined`, who joined), or `system` for expiry, idleness, shutdown, device deletion and a job's end. */
  actor: string;
  reason: string | null;
  at: string;
  trace_id: string;
  /** A port-forward session's targets; null for the other protocols. */
  targets: string[] | null;
  /** A job event's job; absent from session events. */
  job_id?: string;
  /** An access event's request; absent from the others. */
  request_id?: string;
}

/** A session event as appended: every session field set. */
export type SessionAuditEvent = Omit<AuditEvent, 'id' | 'job_id' | 'request_id' | 'session_id' | 'device_id' | 'protocol'> & {
  session_id: string;
  device_id: string;
  protocol: SessionProtocol;
  owner: string;
};

export const JOB_AUDIT_EVENTS = ['job.created', 'job.canceled', 'job.aborted', 'job.completed'] as const;

/** A job event: `owner` is the job's creator (who may see it), `reason` an abort's reason or null. */
export interface JobAuditEvent {
  event: (typeof JOB_AUDIT_EVENTS)[number];
  job_id: string;
  actor: string;
  owner: string;
  reason: string | null;
  trace_id: string;
  at: string;
}

/**
 * An access event (CONTRACT 10.3): `owner` is the requester (who may see it), `actor` who acted
 * (`system` for expiry), `reason` the request's on `created`, the review's on `approved`/`denied`,
 * the revoke's on `revoked`.
 */
export interface AccessAuditEvent {
  event: AccessEventName;
  request_id: string;
  device_id: string;
  actor: string;
  owner: string;
  reason: string | null;
  trace_id: string;
  at: string;
}

export interface AuditQuery {
  session_id?: string | undefined;
  device_id?: string | undefined;
  job_id?: string | undefined;
  event?: AuditEventName | undefined;
  actor?: string | undefined;
  since?: string | undefined;
  /** Only events of sessions opened, or jobs created, by this user (visibility for non-administrators). */
  owner?: string | undefined;
  limit: number;
  offset: number;
}

/** The filters of a listing, as a WHERE clause. */
function matching(q: Omit<AuditQuery, 'limit' | 'offset'>) {
  return (eb: ExpressionBuilder<Schema, 'audit_events'>) => {
    const terms = [];
    if (q.session_id !== undefined) terms.push(eb('session_id', '=', q.session_id));
    if (q.device_id !== undefined) terms.push(eb('device_id', '=', q.device_id));
    if (q.job_id !== undefined) terms.push(eb('job_id', '=', q.job_id));
    if (q.event !== undefined) terms.push(eb('event', '=', q.event));
    if (q.actor !== undefined) terms.push(eb('actor', '=', q.actor));
    if (q.since !== undefined) terms.push(eb('at', '>', q.since));
    if (q.owner !== undefined) terms.push(eb('owner', '=', q.owner));
    return eb.and(terms);
  };
}

const COLUMNS = ['id', 'event', 'session_id', 'device_id', 'protocol', 'actor', 'reason', 'at', 'trace_id', 'targets', 'job_id', 'request_id'] as const;

/**
 * Inserts an event and, in the same transaction, its webhook deliveries (./webhook-outbox.ts):
 * `data` is the event as the listing shows it.
 */
async function insertAudit(db: Executor, row: NewRow<'audit_events'>): Promise<void> {
  await atomically(db, async (tx) => {
    await tx.insertInto('audit_events').values(row).execute();
    await enqueueDeliveries(tx, { event: row.event, at: row.at, data: remoteAccessData(row) });
  });
}

/**
 * Appends a job event through `db`, which may be a transaction: the dispatcher records
 * `job.aborted` and `job.completed` in the transaction that ends the job.
 */
export async function appendJobAudit(db: Executor, event: JobAuditEvent): Promise<void> {
  await insertAudit(db, { ...event, session_id: null, device_id: null, protocol: null, targets: null });
}

export function createAuditRepo(db: Executor) {
  return {
    async append(event: SessionAuditEvent): Promise<void> {
      await insertAudit(db, { ...event, targets: event.targets === null ? null : JSON.stringify(event.targets), job_id: null });
    },
    appendJob: (event: JobAuditEvent): Promise<void> => appendJobAudit(db, event),
    async appendAccess(event: AccessAuditEvent): Promise<void> {
      await insertAudit(db, { ...event, session_id: null, protocol: null, targets: null, job_id: null });
    },
    async list(q: AuditQuery): Promise<{ items: AuditEvent[]; total: number }> {
      const where = matching(q);
      const [items, count] = await Promise.all([
        db.selectFrom('audit_events').select(COLUMNS).where(where).orderBy('id', 'desc').limit(q.limit).offset(q.offset).execute(),
        db
          .selectFrom('audit_events')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where(where)
          .executeTakeFirstOrThrow(),
      ]);
      return {
        items: items.map(({ job_id, request_id, ...e }) => ({
          ...e,
          id: Number(e.id),
          event: e.event as AuditEventName,
          protocol: e.protocol as SessionProtocol | null,
          targets: e.targets === null ? null : (JSON.parse(e.targets) as string[]),
          // Only job events carry the field, as only port-forward sessions carry `targets`.
          ...(job_id === null ? {} : { job_id }),
          ...(request_id === null ? {} : { request_id }),
        })),
        total: Number(count.n),
      };
    },
  };
}
export type AuditRepo = ReturnType<typeof createAuditRepo>;
