/**
 * @module Remote-access sessions: open, read, list, close, expire and close when idle, checks in
 * the documented order (docs/http-api.md, errors: 401, 429, 400, 403, 404, 422, 409), each state
 * change committed together with its audit event. Opening and its rules are `./opening`'s
 * business, extending `./extending`'s, ending sessions and which are due `./closing`'s, who sees
 * which `./visibility`'s; when to look is `./expiry`'s, which sessions nobody uses `./idle`'s,
 * when to tell that one expires soon (`session.expiring`) `./warnings`'.
 */
import type { Logger } from '../../shared/log';
import type { CloseReason } from '../../shared/protocol/control-channel';
import type { Relay } from '../relay';
import type { Store } from '../store/index';
import type { SessionQuery, SessionRow } from '../store/sessions';
import type { Principal } from '../store/tokens';
import { notFound } from '../errors';
import type { CutOffReason } from '../identity/accounts';
import { SYSTEM_ACTOR } from '../identity/identity';
import { createClosing } from './closing';
import { createExpiryTimer } from './expiry';
import { createExtender } from './extending';
import { createSessionWarnings, type ExpiringSession } from './warnings';
import { DEFAULT_SESSION_WARNINGS_S } from '../../shared/relay/expiry-warnings';
import { createIdleClock } from './idle';
import { createOpener, type OpenRequest } from './opening';
import { listVisible, visibleSession } from './visibility';

export { DEFAULT_TTL_S, type OpenRequest } from './opening';
export { canSee, mayJoin } from './visibility';

/** How long a session may have no client connected before it closes `idle` (TETHER_SESSION_IDLE_SECONDS). */
export const DEFAULT_IDLE_S = 300;

export interface SessionsDeps {
  store: Store;
  relay: Relay;
  log: Logger;
  now: () => number;
  /** How long a session may have no client connected (s); default DEFAULT_IDLE_S. */
  idleSeconds?: number | undefined;
  /**
   * Sessions are shared with peers (docs/peers.md): a peer starting or stopping leaves the open
   * ones to the others, instead of closing them `server_shutdown` as the one process does.
   */
  shared?: boolean | undefined;
  /** Seconds before a session's end at which `expiring` is told (TETHER_SESSION_WARNINGS); default 300 and 60. */
  warningsS?: readonly number[] | undefined;
  /** Whether this process tells of sessions expiring soon (the housekeeping's leader; default: yes). */
  leads?: (() => boolean) | undefined;
  /** A session expires soon (the `session.expiring` event). */
  expiring?: ((e: ExpiringSession) => void) | undefined;
}

export function createSessions(deps: SessionsDeps) {
  const { store, relay, log, now, idleSeconds = DEFAULT_IDLE_S, shared = false } = deps;
  const idle = createIdleClock({ idleMs: idleSeconds * 1000, now });
  const warnings = createSessionWarnings({
    store,
    log,
    now,
    offsetsS: deps.expiring ? (deps.warningsS ?? DEFAULT_SESSION_WARNINGS_S) : [],
    leads: deps.leads ?? (() => true),
    expiring: (e) => deps.expiring?.(e),
  });
  const { closeAndNotify, expireDue, nextDue } = createClosing({ store, relay, log, now, idle, idleSeconds, forget: warnings.forget });
  const timer = createExpiryTimer({ log, now, nextDue, expireDue });
  const openSession = createOpener({ store, relay, log, now, idleSeconds });
  const extendSession = createExtender({ store, log, now });

  return {
    /** Opens a session; checks run in the documented order: 403, 404, 503, 422, 409. */
    async open(principal: Principal, req: OpenRequest): Promise<SessionRow> {
      const session = await openSession(principal, req);
      // Nobody is connected yet: the session is idle from its opening.
      idle.opened(session.session_id, Date.parse(session.opened_at));
      timer.opened(
        Math.min(Date.parse(session.expires_at), Date.parse(session.token_expires_at ?? session.expires_at), Date.parse(session.opened_at) + idle.idleMs),
      );
      warnings.watch(session.session_id, Date.parse(session.expires_at));
      relay.sessionOpened(session);
      return session;
    },

    /**
     * Moves an open session's end to `ttlSeconds` from now (its owner or an administrator);
     * checks: 403, 404, 409 (closed), 400 (past 28,800 s in all). The expiry timer looks at the new
     * end, the warnings start over from it, the relay tells the agent and the stream's client.
     */
    async extend(principal: Principal, sessionId: string, ttlSeconds: number): Promise<SessionRow> {
      const session = await extendSession(principal, sessionId, ttlSeconds);
      const endsAt = Date.parse(session.expires_at);
      timer.opened(endsAt); // sooner than what the timer waits for, if the session was shortened
      warnings.watch(sessionId, endsAt);
      relay.sessionExtended?.(session);
      return session;
    },

    get: (principal: Principal, sessionId: string) => visibleSession(store, principal, sessionId),

    list: (principal: Principal, q: Omit<SessionQuery, 'opened_by'>) => listVisible(store, principal, q),

    /** Closes a session the caller may close; a closed or invisible one is 404. */
    async close(principal: Principal, sessionId: string): Promise<SessionRow> {
      const row = await visibleSession(store, principal, sessionId, 'sessions:write');
      if (row.status !== 'open') throw notFound(`session ${sessionId} is already closed`);
      const [closed] = await closeAndNotify([sessionId], 'closed', principal.username);
      if (!closed) throw notFound(`session ${sessionId} is already closed`);
      log.info('session closed', { session_id: sessionId, trace_id: closed.trace_id, user: principal.username });
      return closed;
    },

    /** Closes every open session of a device (it is being deleted). */
    closeAllOfDevice: async (deviceId: string, reason: CloseReason) => closeAndNotify(await store.sessions.openIdsOfDevice(deviceId), reason, SYSTEM_ACTOR),

    /**
     * Closes every open session opened with a token that was just revoked (or whose user was
     * disabled or deleted: `why` says which, in the audit): whoever holds one of their tickets
     * loses the stream too.
     */
    closeAllOfToken: async (tokenId: string, why: CutOffReason = 'token_revoked') =>
      closeAndNotify(await store.sessions.openIdsOfToken(tokenId), 'closed', SYSTEM_ACTOR, why),

    /** Closes every open session opened under an access grant that was just revoked (`access_revoked`), at once. */
    closeAllOfGrant: async (requestId: string, actor: string) => closeAndNotify(await store.sessions.openIdsOfGrant(requestId), 'access_revoked', actor),

    expireDue,

    /** Resolves once the expiry run in progress (if any) has ended: what was due is closed. */
    settled: () => timer.settled(),

    /** Which expiry timers are set (the next due moment's, and the safety sweep). */
    timers: () => timer.armed(),

    /** Whether the warnings' timer is set (tests: none is left after shutdown). */
    warningsArmed: () => warnings.armed(),

    /**
     * At start-up: sessions whose time passed while the server was down are expired; the
     * others lost their tunnels with the server and are closed as `server_shutdown`.
     */
    async reconcile(): Promise<{ expired: number; closed: number }> {
      const expired = (await expireDue()).length;
      if (shared) return { expired, closed: 0 };
      const closed = (await closeAndNotify(await store.sessions.openIds(), 'server_shutdown', SYSTEM_ACTOR)).length;
      return { expired, closed };
    },

    /**
     * Arms the expiry timer and the safety sweep. Sessions still open (a cluster's edges may hold
     * their clients) get a fresh idle window from now: who is connected was this process's memory.
     */
    async start(): Promise<void> {
      const t = now();
      for (const id of await store.sessions.openIds()) idle.opened(id, t);
      await warnings.watchOpen();
      timer.start();
      await timer.settled(); // the first look at what is due is over before anything opens
    },

    /**
     * Another peer opened a session: its idle clock starts now here too, the timer looks at it by
     * its end, so that whichever peer is alive closes it on time, and its warnings are watched.
     */
    openedElsewhere(sessionId: string, expiresAt: number): void {
      idle.opened(sessionId, now());
      timer.opened(Math.min(expiresAt, now() + idle.idleMs));
      warnings.watch(sessionId, expiresAt);
    },

    /** Another peer extended a session: the timers here look at its new end. */
    extendedElsewhere(sessionId: string, expiresAt: number): void {
      timer.opened(expiresAt);
      warnings.watch(sessionId, expiresAt);
    },

    /** Another peer closed a session: nothing to watch here any more. */
    closedElsewhere(sessionId: string): void {
      idle.forget(sessionId);
      warnings.forget(sessionId);
    },

    /**
     * A client connected to a session's stream (the relay, or a cluster's edge, says so): it is
     * in use. Never throws: the relay calls it while admitting the client.
     */
    streamAttached(sessionId: string): void {
      idle.attached(sessionId);
    },

    /**
     * A client left a session's stream: when it was the last, the session's idle clock starts
     * again. Never throws: the relay calls it while releasing the stream.
     */
    streamDetached(sessionId: string): void {
      const dueAt = idle.detached(sessionId);
      try {
        if (dueAt !== undefined) timer.opened(dueAt);
      } catch (err) {
        // The safety sweep looks again within seconds.
        log.error('could not re-arm the session expiry timer', { session_id: sessionId, err });
      }
    },

    /** Closes every open session (server shutdown) and disarms the timer. */
    async shutdown(): Promise<number> {
      await timer.stop();
      warnings.close();
      if (shared) return 0;
      return (await closeAndNotify(await store.sessions.openIds(), 'server_shutdown', SYSTEM_ACTOR)).length;
    },
  };
}
export type Sessions = ReturnType<typeof createSessions>;
