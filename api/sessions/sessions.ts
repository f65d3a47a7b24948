/**
 * @module Remote-access sessions: open, read, list, close, expire and close when idle, checks in
 * the documented order (docs/http-api.md, errors: 401, 429, 400, 403, 404, 422, 409), each state
 * change committed together with its audit event. When to look is `./expiry`'s business, which
 * sessions nobody uses `./idle`'s.
 */
import { newSessionId, newTraceId } from '../../shared/ids';
import type { Logger } from '../../shared/log';
import type { CloseReason, SessionProtocol } from '../../shared/control-channel';
import { ApiError, conflict, notFound } from '../errors';
import { hasScope, requireAccess, type Scope } from '../access';
import type { RelayPort } from '../ports';
import { hasRole, PROTOCOL_MIN_ROLE } from '../roles';
import { isUniqueViolation, type Store } from '../store/index';
import type { Device } from '../store/devices';
import { isAllowed, parsePattern, parseTarget } from '../../shared/forward-targets';
import type { SessionQuery, SessionRow } from '../store/sessions';
import type { Principal } from '../store/tokens';
import type { CutOffReason } from '../identity/accounts';
import { SYSTEM_ACTOR } from '../identity/identity';
import type { SessionHolder } from '../../shared/session-holder';
import { createExpiryTimer } from './expiry';
import { createIdleClock } from './idle';

export const DEFAULT_TTL_S = 3600;
/** How long a session may have no client connected before it closes `idle` (TETHER_SESSION_IDLE_SECONDS). */
export const DEFAULT_IDLE_S = 300;

/** 409: the device's session of that protocol is open; `holder` says whose, and since when. */
export class SessionHeld extends ApiError {
  constructor(
    message: string,
    readonly holder: SessionHolder,
  ) {
    super('conflict', message);
  }
}

export interface OpenRequest {
  device_id: string;
  protocol: SessionProtocol;
  ttl_seconds?: number | undefined;
  /** A port-forward session's targets, canonical `HOST:PORT` (the routes check their form). */
  targets?: string[] | undefined;
}

export interface SessionsDeps {
  store: Store;
  relay: RelayPort;
  log: Logger;
  now: () => number;
  /** How long a session may have no client connected (s); default DEFAULT_IDLE_S. */
  idleSeconds?: number | undefined;
}

const isAdmin = (p: Principal) => hasRole(p.role, 'administrator');
/** Administrators see every session; everyone else only their own. */
export const canSee = (p: Principal, s: SessionRow) => isAdmin(p) || s.opened_by === p.username;
/** Who may join a session's stream, and be shown its ticket: one who may see it, with a token that may write sessions. */
export const mayJoin = (p: Principal, s: SessionRow): boolean => canSee(p, s) && hasScope(p, 'sessions:write');

export function createSessions({ store, relay, log, now, idleSeconds = DEFAULT_IDLE_S }: SessionsDeps) {
  const iso = (ms: number) => new Date(ms).toISOString();
  const idle = createIdleClock({ idleMs: idleSeconds * 1000, now });

  /** Closes one open session with its audit event; undefined if it was not open. */
  const closeInTx = store.db.transaction((sessionId: string, reason: CloseReason, actor: string, why?: string) => {
    const row = store.sessions.close(sessionId, reason, iso(now()));
    if (row) {
      store.audit.append({
        event: reason === 'expired' ? 'session.expired' : 'session.closed',
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

  function closeAndNotify(sessionIds: string[], reason: CloseReason, actor: string, why?: string): SessionRow[] {
    const closed: SessionRow[] = [];
    for (const id of sessionIds) {
      const row = closeInTx(id, reason, actor, why);
      if (row) {
        closed.push(row);
        idle.forget(id);
      }
    }
    // The relay ends the streams and writes their last byte counts, so read the rows again:
    // a closed session's counters are exact.
    for (const row of closed) relay.sessionClosed(row);
    return closed.map((row) => store.sessions.get(row.session_id) ?? row);
  }

  /**
   * Expires every open session whose time has come, closes those whose token expired (a session
   * never outlives the token that opened it), then those nobody used for the idle time.
   */
  function expireDue(): SessionRow[] {
    const at = iso(now());
    const expired = closeAndNotify(store.sessions.dueIds(at), 'expired', SYSTEM_ACTOR);
    for (const s of expired) log.info('session expired', { session_id: s.session_id, trace_id: s.trace_id });
    const orphaned = closeAndNotify(store.sessions.dueByTokenIds(at), 'token_expired', SYSTEM_ACTOR);
    for (const s of orphaned) log.info('session closed: its token expired', { session_id: s.session_id, trace_id: s.trace_id });
    const unused = closeAndNotify(idle.dueIds(), 'idle', SYSTEM_ACTOR);
    for (const s of unused) log.info('session closed: no client for the idle time', { session_id: s.session_id, trace_id: s.trace_id, idle_s: idleSeconds });
    return [...expired, ...orphaned, ...unused];
  }

  /** The earliest moment (ISO) an open session expires, loses its token or goes idle. */
  function nextDue(): string | null {
    const expiry = store.sessions.nextExpiry();
    const idleAt = idle.nextDue();
    if (idleAt === undefined) return expiry;
    return expiry !== null && Date.parse(expiry) <= idleAt ? expiry : iso(idleAt);
  }

  const timer = createExpiryTimer({ log, now, nextDue, expireDue });

  /** The 409 of an open refused by the one-session-per-protocol rule: whose session it is, and since when. */
  function heldBy(req: OpenRequest): ApiError {
    const holder = store.sessions.holderOf(req.device_id, req.protocol);
    const what = `a ${req.protocol} session is already open for device ${req.device_id}`;
    // Closed in the meantime: the caller may simply try again.
    if (!holder) return conflict(`${what}; it is closing now, try again`);
    return new SessionHeld(
      `${what}: ${holder.opened_by} opened it at ${holder.opened_at}. Its owner or an administrator can close it ` +
        `(DELETE /v1/remote-access/sessions/{id}); it also closes once no client has been connected to it for ${idleSeconds} s`,
      { opened_by: holder.opened_by, opened_at: holder.opened_at },
    );
  }

  const openInTx = store.db.transaction((row: Parameters<Store['sessions']['insert']>[0]) => {
    store.sessions.insert(row);
    store.audit.append({
      event: 'session.opened',
      session_id: row.session_id,
      device_id: row.device_id,
      protocol: row.protocol,
      actor: row.opened_by,
      owner: row.opened_by,
      reason: null,
      at: row.opened_at,
      trace_id: row.trace_id,
      targets: row.targets,
    });
  });

  /**
   * 422 `target_not_allowed` unless the device's agent forwards to every target (by the
   * allow-list it announced when it connected; the agent checks each connection again).
   */
  function checkTargets(device: Device, targets: string[]): void {
    if (device.forward_allow === null) {
      throw new ApiError(
        'target_not_allowed',
        `the agent of device ${device.device_id} does not forward ports (it announced no --forward-allow; an agent older than port forwarding, perhaps)`,
      );
    }
    const patterns = device.forward_allow.flatMap((text) => {
      const p = parsePattern(text);
      return p.ok ? [p.value] : [];
    });
    const refused = targets.filter((text) => {
      const t = parseTarget(text);
      return !t.ok || !isAllowed(patterns, t.value);
    });
    if (refused.length > 0) {
      throw new ApiError(
        'target_not_allowed',
        `device ${device.device_id} does not forward to ${refused.join(', ')}: its agent allows ${device.forward_allow.join(', ') || 'nothing'} (its --forward-allow / TETHER_FORWARD_ALLOW)`,
      );
    }
  }

  /** The session if the caller may see it, else 404 (existence never leaks). */
  function visible(principal: Principal, sessionId: string, scope: Scope = 'sessions:read'): SessionRow {
    requireAccess(principal, scope, 'developer');
    const row = store.sessions.get(sessionId);
    if (!row || !canSee(principal, row)) throw notFound(`no session ${sessionId}`);
    return row;
  }

  return {
    /** Opens a session; checks run in the documented order: 403, 404, 503, 422, 409. */
    open(principal: Principal, req: OpenRequest): SessionRow {
      const minimum = PROTOCOL_MIN_ROLE[req.protocol];
      requireAccess(principal, 'sessions:write', minimum, `opening a ${req.protocol} session`);
      const device = store.devices.get(req.device_id);
      if (!device) throw notFound(`no device ${req.device_id}`);
      if (relay.available?.() === false) {
        throw new ApiError(
          'unavailable',
          'the cluster bus (NATS) is unreachable, so no device can be reached now; retry once it is back',
          undefined,
          { 'Retry-After': '5' },
        );
      }
      if (device.agent_status !== 'online') {
        throw new ApiError(
          'unprocessable_entity',
          `the agent of device ${req.device_id} is offline (not connected to the broker); retry once its agent_status is online`,
        );
      }
      if (req.protocol === 'port-forward') checkTargets(device, req.targets ?? []);
      const t = now();
      const ttl = req.ttl_seconds ?? DEFAULT_TTL_S;
      const row = {
        session_id: newSessionId(),
        device_id: req.device_id,
        protocol: req.protocol,
        ttl_seconds: ttl,
        opened_by: principal.username,
        token_id: principal.token_id,
        token_expires_at: principal.expires_at,
        opened_at: iso(t),
        expires_at: iso(t + ttl * 1000),
        trace_id: newTraceId(),
        targets: req.protocol === 'port-forward' ? (req.targets ?? []) : null,
      };
      try {
        openInTx(row);
      } catch (err) {
        if (isUniqueViolation(err)) throw heldBy(req);
        throw err;
      }
      const session = store.sessions.get(row.session_id)!;
      log.info('session opened', { session_id: session.session_id, trace_id: session.trace_id, user: principal.username });
      // Nobody is connected yet: the session is idle from its opening.
      idle.opened(session.session_id, Date.parse(session.opened_at));
      timer.opened(
        Math.min(Date.parse(session.expires_at), Date.parse(session.token_expires_at ?? session.expires_at), Date.parse(session.opened_at) + idle.idleMs),
      );
      relay.sessionOpened(session);
      return session;
    },

    get: (principal: Principal, sessionId: string) => visible(principal, sessionId),

    list(principal: Principal, q: Omit<SessionQuery, 'opened_by'>) {
      requireAccess(principal, 'sessions:read', 'developer');
      return store.sessions.list({ ...q, opened_by: isAdmin(principal) ? undefined : principal.username });
    },

    /** Closes a session the caller may close; a closed or invisible one is 404. */
    close(principal: Principal, sessionId: string): SessionRow {
      const row = visible(principal, sessionId, 'sessions:write');
      if (row.status !== 'open') throw notFound(`session ${sessionId} is already closed`);
      const [closed] = closeAndNotify([sessionId], 'closed', principal.username);
      if (!closed) throw notFound(`session ${sessionId} is already closed`);
      log.info('session closed', { session_id: sessionId, trace_id: closed.trace_id, user: principal.username });
      return closed;
    },

    /** Closes every open session of a device (it is being deleted). */
    closeAllOfDevice: (deviceId: string, reason: CloseReason) =>
      closeAndNotify(store.sessions.openIdsOfDevice(deviceId), reason, SYSTEM_ACTOR),

    /**
     * Closes every open session opened with a token that was just revoked (or whose user was
     * disabled or deleted: `why` says which, in the audit): whoever holds one of their tickets
     * loses the stream too.
     */
    closeAllOfToken: (tokenId: string, why: CutOffReason = 'token_revoked') =>
      closeAndNotify(store.sessions.openIdsOfToken(tokenId), 'closed', SYSTEM_ACTOR, why),

    expireDue,

    /**
     * At start-up: sessions whose time passed while the server was down are expired; the
     * others lost their tunnels with the server and are closed as `server_shutdown`.
     */
    reconcile(): { expired: number; closed: number } {
      const expired = expireDue().length;
      const closed = closeAndNotify(store.sessions.openIds(), 'server_shutdown', SYSTEM_ACTOR).length;
      return { expired, closed };
    },

    /**
     * Arms the expiry timer and the safety sweep. Sessions still open (a cluster's edges may hold
     * their clients) get a fresh idle window from now: who is connected was this process's memory.
     */
    start(): void {
      const t = now();
      for (const id of store.sessions.openIds()) idle.opened(id, t);
      timer.start();
    },

    /**
     * A client connected to a session's stream (the broker, or a cluster's edge, says so): it is
     * in use. Never throws: the broker calls it while admitting the client.
     */
    streamAttached(sessionId: string): void {
      idle.attached(sessionId);
    },

    /**
     * A client left a session's stream: when it was the last, the session's idle clock starts
     * again. Never throws: the broker calls it while releasing the stream.
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
    shutdown(): number {
      timer.stop();
      return closeAndNotify(store.sessions.openIds(), 'server_shutdown', SYSTEM_ACTOR).length;
    },
  };
}
export type Sessions = ReturnType<typeof createSessions>;
