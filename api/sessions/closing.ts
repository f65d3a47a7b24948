/**
 * @module Ending sessions: each close committed together with its audit event, then the relay
 * told, which ends the streams; and which open sessions are due to end: their access grant ended
 * or was revoked, their TTL ran out, their token expired (a session never outlives the token that opened it), or nobody used them for the
 * idle time (`./idle`). When to look is `./expiry`'s business.
 */
import type { CloseReason } from '../../shared/protocol/control-channel';
import type { Logger } from '../../shared/log';
import { SYSTEM_ACTOR } from '../identity/identity';
import type { Relay } from '../relay';
import type { Store } from '../store/index';
import type { SessionRow } from '../store/sessions';
import type { IdleClock } from './idle';

export interface ClosingDeps {
  store: Store;
  relay: Relay;
  log: Logger;
  now: () => number;
  /** Which sessions nobody uses; a closed session is forgotten there. */
  idle: IdleClock;
  /** The idle time (s), for the log. */
  idleSeconds: number;
  /** A session closed here or elsewhere: nothing to warn of any more. */
  forget?: ((sessionId: string) => void) | undefined;
}

export function createClosing({ store, relay, log, now, idle, idleSeconds, forget }: ClosingDeps) {
  const iso = (ms: number) => new Date(ms).toISOString();

  /** Closes one open session with its audit event; undefined if it was not open. */
  const closeInTx = (sessionId: string, reason: CloseReason, actor: string, why?: string) =>
    store.transaction(async (tx) => {
      const row = await tx.sessions.close(sessionId, reason, iso(now()));
      if (row) {
        await tx.audit.append({
          // Its grant's end is its own end: it expired, as by its TTL.
          event: reason === 'expired' || reason === 'access_expired' ? 'session.expired' : 'session.closed',
          session_id: row.session_id,
          device_id: row.device_id,
          protocol: row.protocol,
          actor,
          owner: row.opened_by,
          reason: why ?? reason,
          at: row.closed_at!,
          trace_id: row.trace_id,
          targets: row.targets,
        });
      }
      return row;
    });

  /** Closes the sessions still open among `sessionIds` and tells the relay; returns them as closed. */
  async function closeAndNotify(sessionIds: string[], reason: CloseReason, actor: string, why?: string): Promise<SessionRow[]> {
    const closed: SessionRow[] = [];
    for (const id of sessionIds) {
      const row = await closeInTx(id, reason, actor, why);
      // Closed now, or before (by another peer, or another request): nothing to watch either way.
      idle.forget(id);
      forget?.(id);
      if (row) closed.push(row);
    }
    // The relay ends the streams and writes their last byte counts, so read the rows again:
    // a closed session's counters are exact.
    for (const row of closed) await relay.sessionClosed(row);
    return Promise.all(closed.map(async (row) => (await store.sessions.get(row.session_id)) ?? row));
  }

  /**
   * Expires every open session whose time has come, closes those whose token expired (a session
   * never outlives the token that opened it), then those nobody used for the idle time.
   */
  async function expireDue(): Promise<SessionRow[]> {
    const at = iso(now());
    // First those whose access grant is over: their reason says so (not a plain `expired`).
    const grants = await store.sessions.dueByGrant(at);
    const granted = [
      ...(await closeAndNotify(grants.ended, 'access_expired', SYSTEM_ACTOR)),
      ...(await closeAndNotify(grants.revoked, 'access_revoked', SYSTEM_ACTOR)),
    ];
    for (const s of granted) log.info('session closed: its access grant is over', { session_id: s.session_id, trace_id: s.trace_id, reason: s.close_reason });
    const expired = await closeAndNotify(await store.sessions.dueIds(at), 'expired', SYSTEM_ACTOR);
    for (const s of expired) log.info('session expired', { session_id: s.session_id, trace_id: s.trace_id });
    const orphaned = await closeAndNotify(await store.sessions.dueByTokenIds(at), 'token_expired', SYSTEM_ACTOR);
    for (const s of orphaned) log.info('session closed: its token expired', { session_id: s.session_id, trace_id: s.trace_id });
    const unused = await closeAndNotify(idle.dueIds(), 'idle', SYSTEM_ACTOR);
    for (const s of unused) log.info('session closed: no client for the idle time', { session_id: s.session_id, trace_id: s.trace_id, idle_s: idleSeconds });
    return [...granted, ...expired, ...orphaned, ...unused];
  }

  /** The earliest moment (ISO) an open session expires, loses its token or goes idle. */
  async function nextDue(): Promise<string | null> {
    const expiry = await store.sessions.nextExpiry();
    const idleAt = idle.nextDue();
    if (idleAt === undefined) return expiry;
    return expiry !== null && Date.parse(expiry) <= idleAt ? expiry : iso(idleAt);
  }

  return { closeAndNotify, expireDue, nextDue };
}
