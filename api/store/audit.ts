/** @module The remote-access audit log: append-only events, newest first when listed. */
import type { ExpressionBuilder } from 'kysely';
import type { Executor, Schema } from './schema';
import type { SessionProtocol } from '../../shared/protocol/control-channel';

/** `session.joined`: someone other than its owner (an administrator) connected to a session's stream. */
import type { AuditEventName } from '../../shared/api/sessions';

export { AUDIT_EVENTS, type AuditEventName } from '../../shared/api/sessions';

export interface AuditEvent {
  id: number;
  event: AuditEventName;
  session_id: string;
  device_id: string;
  protocol: SessionProtocol;
  /** Who acted: a username (for `session.joined`, who joined), or `system` for expiry, idleness, shutdown and device deletion. */
  actor: string;
  reason: string | null;
  at: string;
  trace_id: string;
  /** A port-forward session's targets; null for the other protocols. */
  targets: string[] | null;
}

export interface AuditQuery {
  session_id?: string | undefined;
  device_id?: string | undefined;
  event?: AuditEventName | undefined;
  actor?: string | undefined;
  since?: string | undefined;
  /** Only events of sessions opened by this user (visibility for non-administrators). */
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
    if (q.event !== undefined) terms.push(eb('event', '=', q.event));
    if (q.actor !== undefined) terms.push(eb('actor', '=', q.actor));
    if (q.since !== undefined) terms.push(eb('at', '>', q.since));
    if (q.owner !== undefined) terms.push(eb('owner', '=', q.owner));
    return eb.and(terms);
  };
}

const COLUMNS = ['id', 'event', 'session_id', 'device_id', 'protocol', 'actor', 'reason', 'at', 'trace_id', 'targets'] as const;

export function createAuditRepo(db: Executor) {
  return {
    async append(event: Omit<AuditEvent, 'id'> & { owner: string }): Promise<void> {
      await db
        .insertInto('audit_events')
        .values({ ...event, targets: event.targets === null ? null : JSON.stringify(event.targets) })
        .execute();
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
        items: items.map((e) => ({
          ...e,
          id: Number(e.id),
          event: e.event as AuditEventName,
          protocol: e.protocol as SessionProtocol,
          targets: e.targets === null ? null : (JSON.parse(e.targets) as string[]),
        })),
        total: Number(count.n),
      };
    },
  };
}
export type AuditRepo = ReturnType<typeof createAuditRepo>;
