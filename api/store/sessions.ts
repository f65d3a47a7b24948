/** @module Remote-access session records. The open-session rule lives in a partial unique index. */
import { sql, type ExpressionBuilder } from 'kysely';
import { atomically, type Executor, type Schema } from './schema';
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
  /** The access grant (request) it was opened under; null when no access policy applied. */
  access_request_id: string | null;
}

/** A row as the database holds it: `targets` as JSON text. */
type StoredSession = Omit<SessionRow, 'targets'> & { targets: string | null };

/** A stored row's columns, typed as the repository hands them out. */
const asStored = (row: Record<string, unknown>) => row as unknown as StoredSession;

const toSession = (row: Record<string, unknown>): SessionRow => {
  const stored = asStored(row);
  return { ...stored, targets: stored.targets === null ? null : (JSON.parse(stored.targets) as string[]) };
};
const toSessionOrUndefined = (row: Record<string, unknown> | undefined): SessionRow | undefined => (row ? toSession(row) : undefined);

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

/** The filters of a listing, as a WHERE clause. */
function matching(q: Omit<SessionQuery, 'limit' | 'offset'>) {
  return (eb: ExpressionBuilder<Schema, 'sessions'>) => {
    const terms = [];
    if (q.device_id !== undefined) terms.push(eb('device_id', '=', q.device_id));
    if (q.protocol !== undefined) terms.push(eb('protocol', '=', q.protocol));
    if (q.status !== undefined) terms.push(eb('status', '=', q.status));
    if (q.since !== undefined) terms.push(eb('opened_at', '>', q.since));
    if (q.opened_by !== undefined) terms.push(eb('opened_by', '=', q.opened_by));
    if (q.has_recording !== undefined) {
      const recorded = eb.exists(eb.selectFrom('recordings as r').select(sql.lit(1).as('one')).whereRef('r.session_id', '=', 'sessions.session_id'));
      terms.push(q.has_recording ? recorded : eb.not(recorded));
    }
    return eb.and(terms);
  };
}

const openSessionIds = async (query: Promise<{ session_id: string }[]>): Promise<string[]> => (await query).map((r) => r.session_id);

export function createSessionRepo(db: Executor) {
  const open = () => db.selectFrom('sessions').where('status', '=', 'open');
  return {
    /** Inserts an open session; throws a unique violation (`isUniqueViolation`) if one of that protocol is open. */
    async insert(
      row: Omit<SessionRow, 'status' | 'closed_at' | 'close_reason' | 'bytes_to_device' | 'bytes_from_device' | 'access_request_id'> & {
        access_request_id?: string | null;
      },
    ): Promise<void> {
      await db
        .insertInto('sessions')
        .values({ ...row, status: 'open', targets: row.targets === null ? null : JSON.stringify(row.targets) })
        .execute();
    },
    get: async (sessionId: string): Promise<SessionRow | undefined> =>
      toSessionOrUndefined(await db.selectFrom('sessions').selectAll().where('session_id', '=', sessionId).executeTakeFirst()),
    async list(q: SessionQuery): Promise<{ items: SessionRow[]; total: number }> {
      const where = matching(q);
      const [items, count] = await Promise.all([
        db.selectFrom('sessions').selectAll().where(where).orderBy('opened_at', 'desc').orderBy('session_id', 'desc').limit(q.limit).offset(q.offset).execute(),
        db
          .selectFrom('sessions')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where(where)
          .executeTakeFirstOrThrow(),
      ]);
      return { items: items.map(toSession), total: Number(count.n) };
    },
    /**
     * Closes an open session; undefined if it was not open (already closed, or unknown). Of
     * peers closing the same session at once, exactly one gets the row.
     */
    close: async (sessionId: string, reason: CloseReason, at: string): Promise<SessionRow | undefined> =>
      toSessionOrUndefined(
        await db
          .updateTable('sessions')
          .set({ status: 'closed', closed_at: at, close_reason: reason })
          .where('session_id', '=', sessionId)
          .where('status', '=', 'open')
          .returningAll()
          .executeTakeFirst(),
      ),
    /**
     * Moves an open session's end (an extend) while it has not passed `at`; undefined when it is
     * closed or already due (the expiry timer closes it).
     */
    extend: async (sessionId: string, expiresAt: string, ttlSeconds: number, at: string): Promise<SessionRow | undefined> =>
      toSessionOrUndefined(
        await db
          .updateTable('sessions')
          .set({ expires_at: expiresAt, ttl_seconds: ttlSeconds })
          .where('session_id', '=', sessionId)
          .where('status', '=', 'open')
          .where('expires_at', '>', at)
          .returningAll()
          .executeTakeFirst(),
      ),
    /** Ids of open sessions whose expiry is at or before `at`. */
    dueIds: (at: string): Promise<string[]> => openSessionIds(open().select('session_id').where('expires_at', '<=', at).execute()),
    /** Ids of open sessions whose token expired at or before `at`, while they had not (those are `expired`). */
    dueByTokenIds: (at: string): Promise<string[]> =>
      openSessionIds(open().select('session_id').where('token_expires_at', '<=', at).where('expires_at', '>', at).execute()),
    openIds: (): Promise<string[]> => openSessionIds(open().select('session_id').execute()),
    /** Who holds the device's open session of `protocol`, and since when; undefined when none is open. */
    holderOf: (deviceId: string, protocol: SessionProtocol): Promise<{ opened_by: string; opened_at: string } | undefined> =>
      open().select(['opened_by', 'opened_at']).where('device_id', '=', deviceId).where('protocol', '=', protocol).executeTakeFirst(),
    openIdsOfDevice: (deviceId: string): Promise<string[]> => openSessionIds(open().select('session_id').where('device_id', '=', deviceId).execute()),
    openIdsOfToken: (tokenId: string): Promise<string[]> => openSessionIds(open().select('session_id').where('token_id', '=', tokenId).execute()),
    openIdsOfGrant: (requestId: string): Promise<string[]> => openSessionIds(open().select('session_id').where('access_request_id', '=', requestId).execute()),
    /**
     * Open sessions whose access grant is over at `at`: ended (its `ends_at` passed: they close
     * `access_expired`) or revoked (a revoke closes them at once; this finds any it missed).
     */
    async dueByGrant(at: string): Promise<{ ended: string[]; revoked: string[] }> {
      const rows = await db
        .selectFrom('sessions as s')
        .innerJoin('access_requests as r', 'r.request_id', 's.access_request_id')
        .select(['s.session_id', 'r.status'])
        .where('s.status', '=', 'open')
        .where((eb) => eb.or([eb('r.ends_at', '<=', at), eb('r.status', '=', 'revoked')]))
        .execute();
      return {
        ended: rows.filter((r) => r.status !== 'revoked').map((r) => r.session_id),
        revoked: rows.filter((r) => r.status === 'revoked').map((r) => r.session_id),
      };
    },
    /** The earliest moment an open session expires or loses its token. */
    async nextExpiry(): Promise<string | null> {
      const row = await open()
        .select((eb) => [eb.fn.min<string | null>('expires_at').as('expiry'), eb.fn.min<string | null>('token_expires_at').as('token_expiry')])
        .executeTakeFirstOrThrow();
      const { expiry, token_expiry: tokenExpiry } = row;
      if (expiry === null || tokenExpiry === null) return expiry ?? tokenExpiry;
      return tokenExpiry < expiry ? tokenExpiry : expiry;
    },
    async openCount(): Promise<number> {
      const row = await open()
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow();
      return Number(row.n);
    },
    /** Adds tunnel byte counts to many sessions in one transaction. */
    addBytes: (deltas: Map<string, { toDevice: number; fromDevice: number }>): Promise<void> =>
      atomically(db, async (tx) => {
        for (const [id, d] of deltas) {
          await tx
            .updateTable('sessions')
            .set((eb) => ({ bytes_to_device: eb('bytes_to_device', '+', d.toDevice), bytes_from_device: eb('bytes_from_device', '+', d.fromDevice) }))
            .where('session_id', '=', id)
            .execute();
        }
      }),
  };
}
export type SessionRepo = ReturnType<typeof createSessionRepo>;
