/**
 * @module Extending a session (docs/http-api.md, sessions): its owner or an administrator moves its
 * end to `ttl_seconds` from now, as long as its whole life (from `opened_at`) stays within the
 * seed's 28,800 s; the row and its audit event (`session.extended`) commit together, and only while
 * the session is open and not yet due, so an extend never revives a session the expiry is closing.
 * A session opened under an access grant is never extended past the grant's end (it stops there).
 * What follows (timers, the relay) is the caller's.
 */
import { TTL_MAX_S } from '../../shared/api/sessions';
import type { Logger } from '../../shared/log';
import { badRequest, conflict } from '../errors';
import type { Store } from '../store/index';
import type { SessionRow } from '../store/sessions';
import type { Principal } from '../store/tokens';
import { visibleSession } from './visibility';

export interface ExtenderDeps {
  store: Store;
  log: Logger;
  now: () => number;
}

const iso = (ms: number) => new Date(ms).toISOString();

/** 409: the session is over; a new one is the way on. */
const ended = (row: SessionRow) => conflict(`session ${row.session_id} is closed (${row.close_reason ?? 'closed'}) and cannot be extended; open a new one`);

export function createExtender({ store, log, now }: ExtenderDeps) {
  /** The 400 of an extend past the whole-life limit: the most it may be extended by now, and until when. */
  function tooLong(row: SessionRow, ttlSeconds: number, t: number): Error {
    const lastEnd = Date.parse(row.opened_at) + TTL_MAX_S * 1000;
    const most = Math.max(0, Math.floor((lastEnd - t) / 1000));
    const message =
      `a session lives at most ${TTL_MAX_S} s from its opening (${row.opened_at}), so it can last until ${iso(lastEnd)} at the latest: ` +
      `ttl_seconds may be at most ${most} now`;
    return badRequest(`cannot extend session ${row.session_id} by ${ttlSeconds} s: ${message}`, [{ path: 'ttl_seconds', message }]);
  }

  /**
   * The latest a session opened under an access grant may end: the grant's end (Infinity
   * without one). A grant no longer approved (revoked, ended) is 409: the session is closing.
   */
  async function grantEnd(row: SessionRow): Promise<number> {
    if (row.access_request_id === null) return Infinity;
    const grant = await store.access.get(row.access_request_id);
    if (!grant || grant.status !== 'approved' || grant.ends_at === null) {
      throw conflict(
        `session ${row.session_id} was opened under access request ${row.access_request_id}, which is ${grant?.status ?? 'gone'}; it cannot be extended`,
      );
    }
    return Date.parse(grant.ends_at);
  }

  /** Moves the session's end to `ttlSeconds` from now; checks: 403 (scope), 404, 409 (closed), 400 (past the limit). */
  return async function extendSession(principal: Principal, sessionId: string, ttlSeconds: number): Promise<SessionRow> {
    const row = await visibleSession(store, principal, sessionId, 'sessions:write');
    const t = now();
    if (row.status !== 'open' || Date.parse(row.expires_at) <= t) throw ended(row);
    const expiresAt = Math.min(t + ttlSeconds * 1000, await grantEnd(row));
    const openedAt = Date.parse(row.opened_at);
    if (expiresAt - openedAt > TTL_MAX_S * 1000) throw tooLong(row, ttlSeconds, t);
    // ttl_seconds stays the session's whole life, as at its opening.
    const total = Math.round((expiresAt - openedAt) / 1000);
    const extended = await store.transaction(async (tx) => {
      const updated = await tx.sessions.extend(sessionId, iso(expiresAt), total, iso(t));
      if (!updated) return undefined;
      await tx.audit.append({
        event: 'session.extended',
        session_id: updated.session_id,
        device_id: updated.device_id,
        protocol: updated.protocol,
        actor: principal.username,
        owner: updated.opened_by,
        reason: updated.expires_at,
        at: iso(t),
        trace_id: updated.trace_id,
        targets: updated.targets,
      });
      return updated;
    });
    // Closed (or come due) between the read and the write.
    if (!extended) throw ended((await store.sessions.get(sessionId)) ?? row);
    log.info('session extended', { session_id: sessionId, trace_id: extended.trace_id, user: principal.username, expires_at: extended.expires_at });
    return extended;
  };
}
