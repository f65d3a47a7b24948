/**
 * @module The audit log of changes to who can do what (api/audit/): append-only rows, newest first
 * when listed; a repeated event may be folded into the row of its first occurrence (`count`).
 */
import type { ExpressionBuilder } from 'kysely';
import type { AuditLogEventName, AuditOutcome, AuditTargetKind } from '../../shared/api/audit';
import type { Executor, Schema } from './schema';

/** One event as the log keeps it. */
export interface AuditLogRow {
  id: number;
  event: AuditLogEventName;
  actor: string;
  target: { kind: AuditTargetKind; id: string };
  details: Record<string, unknown>;
  outcome: AuditOutcome;
  at: string;
  trace_id: string;
  source_ip: string | null;
  count: number;
  last_at: string | null;
}

export type NewAuditLogRow = Omit<AuditLogRow, 'id' | 'count' | 'last_at'>;

export interface AuditLogFilter {
  /** An event, or a family ending in `.` (`user.`). */
  event?: string | undefined;
  actor?: string | undefined;
  /** A target id, or `kind:id`. */
  target?: string | undefined;
  /** At or after (ISO 8601). */
  since?: string | undefined;
  /** Before (ISO 8601). */
  until?: string | undefined;
}

/** The rows a repeat folds into: the same event, target, address and details, since `since`. */
export interface RepeatKey {
  event: AuditLogEventName;
  target_id: string;
  source_ip: string | null;
  details: Record<string, unknown>;
  since: string;
}

/** The filters of a listing, as a WHERE clause. A family is a range: `_` would be a LIKE wildcard. */
function matching(q: AuditLogFilter) {
  return (eb: ExpressionBuilder<Schema, 'audit_log'>) => {
    const terms = [];
    if (q.event?.endsWith('.')) terms.push(eb('event', '>=', q.event), eb('event', '<', `${q.event.slice(0, -1)}/`));
    else if (q.event !== undefined) terms.push(eb('event', '=', q.event));
    if (q.actor !== undefined) terms.push(eb('actor', '=', q.actor));
    if (q.target !== undefined) {
      const colon = q.target.indexOf(':');
      if (colon < 0) terms.push(eb('target_id', '=', q.target));
      else terms.push(eb('target_kind', '=', q.target.slice(0, colon)), eb('target_id', '=', q.target.slice(colon + 1)));
    }
    if (q.since !== undefined) terms.push(eb('at', '>=', q.since));
    if (q.until !== undefined) terms.push(eb('at', '<', q.until));
    return eb.and(terms);
  };
}

const toInsert = (e: NewAuditLogRow) => ({
  event: e.event,
  actor: e.actor,
  target_kind: e.target.kind,
  target_id: e.target.id,
  details: JSON.stringify(e.details),
  outcome: e.outcome,
  at: e.at,
  trace_id: e.trace_id,
  source_ip: e.source_ip,
});

export function createAuditLogRepo(db: Executor) {
  return {
    async append(events: readonly NewAuditLogRow[]): Promise<void> {
      if (events.length > 0) await db.insertInto('audit_log').values(events.map(toInsert)).execute();
    },

    /** Counts one more occurrence on the newest row `key` names; false when there is none. */
    async repeat(key: RepeatKey, at: string): Promise<boolean> {
      const row = await db
        .selectFrom('audit_log')
        .select('id')
        .where('event', '=', key.event)
        .where('at', '>=', key.since)
        .where('target_id', '=', key.target_id)
        .where('details', '=', JSON.stringify(key.details))
        .where((eb) => (key.source_ip === null ? eb('source_ip', 'is', null) : eb('source_ip', '=', key.source_ip)))
        .orderBy('id', 'desc')
        .limit(1)
        .executeTakeFirst();
      if (!row) return false;
      await db
        .updateTable('audit_log')
        .set((eb) => ({ count: eb('count', '+', 1), last_at: at }))
        .where('id', '=', row.id)
        .execute();
      return true;
    },

    /** How many rows of `event` were written since `since`. */
    async rowsSince(event: AuditLogEventName, since: string): Promise<number> {
      const r = await db
        .selectFrom('audit_log')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('event', '=', event)
        .where('at', '>=', since)
        .executeTakeFirstOrThrow();
      return Number(r.n);
    },

    /** A page of events, newest first, and how many match in all. */
    async list(q: AuditLogFilter & { limit: number; offset: number }): Promise<{ items: AuditLogRow[]; total: number }> {
      const where = matching(q);
      const [rows, count] = await Promise.all([
        db.selectFrom('audit_log').selectAll().where(where).orderBy('id', 'desc').limit(q.limit).offset(q.offset).execute(),
        db
          .selectFrom('audit_log')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where(where)
          .executeTakeFirstOrThrow(),
      ]);
      const items = rows.map((r): AuditLogRow => ({
        id: Number(r.id),
        event: r.event as AuditLogEventName,
        actor: r.actor,
        target: { kind: r.target_kind as AuditTargetKind, id: r.target_id },
        details: JSON.parse(r.details) as Record<string, unknown>,
        outcome: r.outcome as AuditOutcome,
        at: r.at,
        trace_id: r.trace_id,
        source_ip: r.source_ip,
        count: Number(r.count),
        last_at: r.last_at,
      }));
      return { items, total: Number(count.n) };
    },
  };
}
export type AuditLogRepo = ReturnType<typeof createAuditLogRepo>;
