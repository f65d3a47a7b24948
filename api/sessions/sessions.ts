/**
 * @module Remote-access sessions: open, read, list, close and expire, checks in the documented
 * order (docs/http-api.md, errors: 401, 429, 400, 403, 404, 422, 409), each state change
 * committed together with its audit event. When to expire is `./expiry`'s business.
 */
import { newSessionId, newTraceId } from '../../shared/ids';
import type { Logger } from '../../shared/log';
import type { CloseReason, SessionProtocol } from '../../shared/control-channel';
import { ApiError, conflict, notFound } from '../errors';
import { requireAccess, type Scope } from '../access';
import type { RelayPort } from '../ports';
import { hasRole, PROTOCOL_MIN_ROLE } from '../roles';
import { isUniqueViolation, type Store } from '../store/index';
import type { Device } from '../store/devices';
import { isAllowed, parsePattern, parseTarget } from '../../shared/forward-targets';
import type { SessionQuery, SessionRow } from '../store/sessions';
import type { Principal } from '../store/tokens';
import type { CutOffReason } from '../identity/accounts';
import { SYSTEM_ACTOR } from '../identity/identity';
import { createExpiryTimer } from './expiry';

export const DEFAULT_TTL_S = 3600;

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
}

const isAdmin = (p: Principal) => hasRole(p.role, 'administrator');
/** Administrators see every session; everyone else only their own. */
export const canSee = (p: Principal, s: SessionRow) => isAdmin(p) || s.opened_by === p.username;

export function createSessions({ store, relay, log, now }: SessionsDeps) {
  const iso = (ms: number) => new Date(ms).toISOString();

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
      if (row) closed.push(row);
    }
    // The relay ends the streams and writes their last byte counts, so read the rows again:
    // a closed session's counters are exact.
    for (const row of closed) relay.sessionClosed(row);
    return closed.map((row) => store.sessions.get(row.session_id) ?? row);
  }

  /**
   * Expires every open session whose time has come, and closes those whose token expired
   * (a session never outlives the token that opened it).
   */
  function expireDue(): SessionRow[] {
    const at = iso(now());
    const expired = closeAndNotify(store.sessions.dueIds(at), 'expired', SYSTEM_ACTOR);
    for (const s of expired) log.info('session expired', { session_id: s.session_id, trace_id: s.trace_id });
    const orphaned = closeAndNotify(store.sessions.dueByTokenIds(at), 'token_expired', SYSTEM_ACTOR);
    for (const s of orphaned) log.info('session closed: its token expired', { session_id: s.session_id, trace_id: s.trace_id });
    return [...expired, ...orphaned];
  }

  const timer = createExpiryTimer({ log, now, nextDue: () => store.sessions.nextExpiry(), expireDue });

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
        if (isUniqueViolation(err)) {
          throw conflict(
            `a ${req.protocol} session is already open for device ${req.device_id}; close it first (DELETE /v1/remote-access/sessions/{id})`,
          );
        }
        throw err;
      }
      const session = store.sessions.get(row.session_id)!;
      log.info('session opened', { session_id: session.session_id, trace_id: session.trace_id, user: principal.username });
      timer.opened(Math.min(Date.parse(session.expires_at), Date.parse(session.token_expires_at ?? session.expires_at)));
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

    /** Arms the expiry timer and the safety sweep. */
    start: () => timer.start(),

    /** Closes every open session (server shutdown) and disarms the timer. */
    shutdown(): number {
      timer.stop();
      return closeAndNotify(store.sessions.openIds(), 'server_shutdown', SYSTEM_ACTOR).length;
    },
  };
}
export type Sessions = ReturnType<typeof createSessions>;
