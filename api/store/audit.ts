/** @module The remote-access audit log: append-only events, newest first when listed. */
import type { Db } from './db';
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

const FILTER = `(@session_id IS NULL OR session_id = @session_id)
  AND (@device_id IS NULL OR device_id = @device_id)
  AND (@event IS NULL OR event = @event)
  AND (@actor IS NULL OR actor = @actor)
  AND (@since IS NULL OR at > @since)
  AND (@owner IS NULL OR owner = @owner)`;

const COLUMNS = 'id, event, session_id, device_id, protocol, actor, reason, at, trace_id, targets';

export function createAuditRepo(db: Db) {
  const insert = db.prepare(
    `INSERT INTO audit_events (event, session_id, device_id, protocol, actor, owner, reason, at, trace_id, targets)
     VALUES (@event, @session_id, @device_id, @protocol, @actor, @owner, @reason, @at, @trace_id, @targets)`,
  );
  const page = db.prepare<[Record<string, unknown>], Omit<AuditEvent, 'targets'> & { targets: string | null }>(
    `SELECT ${COLUMNS} FROM audit_events WHERE ${FILTER} ORDER BY id DESC LIMIT @limit OFFSET @offset`,
  );
  const count = db.prepare<[Record<string, unknown>], { n: number }>(`SELECT COUNT(*) AS n FROM audit_events WHERE ${FILTER}`);

  return {
    append(event: Omit<AuditEvent, 'id'> & { owner: string }): void {
      insert.run({ ...event, targets: event.targets === null ? null : JSON.stringify(event.targets) });
    },
    list(q: AuditQuery): { items: AuditEvent[]; total: number } {
      const p = {
        session_id: q.session_id ?? null,
        device_id: q.device_id ?? null,
        event: q.event ?? null,
        actor: q.actor ?? null,
        since: q.since ?? null,
        owner: q.owner ?? null,
      };
      const items = page.all({ ...p, limit: q.limit, offset: q.offset });
      return { items: items.map((e) => ({ ...e, targets: e.targets === null ? null : (JSON.parse(e.targets) as string[]) })), total: count.get(p)!.n };
    },
  };
}
export type AuditRepo = ReturnType<typeof createAuditRepo>;
