/** @module Remote-access session records. The open-session rule lives in a partial unique index. */
import type { Db } from './db';
import type { CloseReason, SessionProtocol } from '../../shared/protocol/control-channel';

export type SessionStatus = 'open' | 'closed';

export interface SessionRow {
  session_id: string;
  device_id: string;
  protocol: SessionProtocol;
  status: SessionStatus;
  ttl_seconds: number;
  opened_by: string;
  /** The token the session was opened with (null for sessions older than migration 4). */
  token_id: string | null;
  /** When that token expires: the session closes then (`token_expired`); null: never. */
  token_expires_at: string | null;
  opened_at: string;
  expires_at: string;
  closed_at: string | null;
  close_reason: CloseReason | null;
  bytes_to_device: number;
  bytes_from_device: number;
  trace_id: string;
  /** A port-forward session's targets (canonical `HOST:PORT`); null for the other protocols. */
  targets: string[] | null;
}

/** A row as SQLite holds it: `targets` as JSON text. */
type StoredSession = Omit<SessionRow, 'targets'> & { targets: string | null };

const toSession = (row: StoredSession): SessionRow => ({ ...row, targets: row.targets === null ? null : (JSON.parse(row.targets) as string[]) });
const toSessionOrUndefined = (row: StoredSession | undefined): SessionRow | undefined => (row ? toSession(row) : undefined);

export interface SessionQuery {
  device_id?: string | undefined;
  protocol?: SessionProtocol | undefined;
  status?: SessionStatus | undefined;
  /** Only sessions opened strictly after this ISO timestamp. */
  since?: string | undefined;
  /** Only sessions opened by this user (visibility for non-administrators). */
  opened_by?: string | undefined;
  /** Only sessions with (true) or without (false) a recording. */
  has_recording?: boolean | undefined;
  limit: number;
  offset: number;
}

const FILTER = `(@device_id IS NULL OR device_id = @device_id)
  AND (@protocol IS NULL OR protocol = @protocol)
  AND (@status IS NULL OR status = @status)
  AND (@since IS NULL OR opened_at > @since)
  AND (@opened_by IS NULL OR opened_by = @opened_by)
  AND (@has_recording IS NULL OR EXISTS (SELECT 1 FROM recordings r WHERE r.session_id = sessions.session_id) = @has_recording)`;

export function createSessionRepo(db: Db) {
  const insert = db.prepare(
    `INSERT INTO sessions (session_id, device_id, protocol, status, ttl_seconds, opened_by, token_id, token_expires_at, opened_at, expires_at, trace_id, targets)
     VALUES (@session_id, @device_id, @protocol, 'open', @ttl_seconds, @opened_by, @token_id, @token_expires_at, @opened_at, @expires_at, @trace_id, @targets)`,
  );
  const byId = db.prepare<[string], StoredSession>('SELECT * FROM sessions WHERE session_id = ?');
  const page = db.prepare<[Record<string, unknown>], StoredSession>(
    `SELECT * FROM sessions WHERE ${FILTER} ORDER BY opened_at DESC, session_id DESC LIMIT @limit OFFSET @offset`,
  );
  const count = db.prepare<[Record<string, unknown>], { n: number }>(`SELECT COUNT(*) AS n FROM sessions WHERE ${FILTER}`);
  const close = db.prepare<[string, CloseReason, string], StoredSession>(
    `UPDATE sessions SET status = 'closed', closed_at = ?, close_reason = ?
      WHERE session_id = ? AND status = 'open' RETURNING *`,
  );
  const due = db.prepare<[string], { session_id: string }>("SELECT session_id FROM sessions WHERE status = 'open' AND expires_at <= ?");
  // A session whose own expiry also passed is `expired`, not `token_expired`.
  const dueByToken = db.prepare<[string, string], { session_id: string }>(
    "SELECT session_id FROM sessions WHERE status = 'open' AND token_expires_at <= ? AND expires_at > ?",
  );
  const openIds = db.prepare<[], { session_id: string }>("SELECT session_id FROM sessions WHERE status = 'open'");
  const openOfProtocol = db.prepare<[string, SessionProtocol], { opened_by: string; opened_at: string }>(
    "SELECT opened_by, opened_at FROM sessions WHERE status = 'open' AND device_id = ? AND protocol = ?",
  );
  const openOfDevice = db.prepare<[string], { session_id: string }>("SELECT session_id FROM sessions WHERE status = 'open' AND device_id = ?");
  const openOfToken = db.prepare<[string], { session_id: string }>("SELECT session_id FROM sessions WHERE status = 'open' AND token_id = ?");
  const nextExpiry = db.prepare<[], { at: string | null }>(
    "SELECT MIN(MIN(expires_at, COALESCE(token_expires_at, expires_at))) AS at FROM sessions WHERE status = 'open'",
  );
  const openCount = db.prepare<[], { n: number }>("SELECT COUNT(*) AS n FROM sessions WHERE status = 'open'");
  const addBytes = db.prepare<[number, number, string]>(
    `UPDATE sessions SET bytes_to_device = bytes_to_device + ?, bytes_from_device = bytes_from_device + ?
      WHERE session_id = ?`,
  );

  const params = (q: Omit<SessionQuery, 'limit' | 'offset'>) => ({
    device_id: q.device_id ?? null,
    protocol: q.protocol ?? null,
    status: q.status ?? null,
    since: q.since ?? null,
    opened_by: q.opened_by ?? null,
    has_recording: q.has_recording === undefined ? null : q.has_recording ? 1 : 0,
  });

  return {
    /** Inserts an open session; throws SQLITE_CONSTRAINT_UNIQUE if one of that protocol is open. */
    insert(row: Omit<SessionRow, 'status' | 'closed_at' | 'close_reason' | 'bytes_to_device' | 'bytes_from_device'>): void {
      insert.run({ ...row, targets: row.targets === null ? null : JSON.stringify(row.targets) });
    },
    get: (sessionId: string): SessionRow | undefined => toSessionOrUndefined(byId.get(sessionId)),
    list(q: SessionQuery): { items: SessionRow[]; total: number } {
      const p = params(q);
      return { items: page.all({ ...p, limit: q.limit, offset: q.offset }).map(toSession), total: count.get(p)!.n };
    },
    /** Closes an open session; undefined if it was not open (already closed or unknown). */
    close: (sessionId: string, reason: CloseReason, at: string): SessionRow | undefined => toSessionOrUndefined(close.get(at, reason, sessionId)),
    /** Ids of open sessions whose expiry is at or before `at`. */
    dueIds: (at: string): string[] => due.all(at).map((r) => r.session_id),
    /** Ids of open sessions whose token expired at or before `at`, while they had not. */
    dueByTokenIds: (at: string): string[] => dueByToken.all(at, at).map((r) => r.session_id),
    openIds: (): string[] => openIds.all().map((r) => r.session_id),
    /** Who holds the device's open session of `protocol`, and since when; undefined when none is open. */
    holderOf: (deviceId: string, protocol: SessionProtocol): { opened_by: string; opened_at: string } | undefined => openOfProtocol.get(deviceId, protocol),
    openIdsOfDevice: (deviceId: string): string[] => openOfDevice.all(deviceId).map((r) => r.session_id),
    openIdsOfToken: (tokenId: string): string[] => openOfToken.all(tokenId).map((r) => r.session_id),
    /** The earliest moment an open session expires or loses its token. */
    nextExpiry: (): string | null => nextExpiry.get()!.at,
    openCount: (): number => openCount.get()!.n,
    /** Adds tunnel byte counts to many sessions in one transaction. */
    addBytes: db.transaction((deltas: Map<string, { toDevice: number; fromDevice: number }>): void => {
      for (const [id, d] of deltas) addBytes.run(d.toDevice, d.fromDevice, id);
    }),
  };
}
export type SessionRepo = ReturnType<typeof createSessionRepo>;
