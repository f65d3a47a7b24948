/**
 * @module Opening a session: the checks in the documented order (403, 404, 403 of an access
 * policy, 503, 422, 409), a port-forward's targets held against the allow-list its agent
 * announced, the end of the access grant it opens under (if a policy asks for one), and the row committed
 * together with its audit event. One session per device and protocol is kept by a unique index,
 * not read-then-write; an open it refuses says whose session holds the device, and since when.
 */
import { newSessionId, newTraceId } from '../../shared/ids';
import type { Logger } from '../../shared/log';
import type { SessionProtocol } from '../../shared/protocol/control-channel';
import { isAllowed, parsePattern, parseTarget } from '../../shared/protocol/port-forward/targets';
import type { SessionHolder } from '../../shared/api/errors';
import { TTL_MIN_S } from '../../shared/api/sessions';
import { requireAccess } from '../access';
import { requireGrant } from '../access-requests/enforcement';
import { ApiError, conflict, notFound } from '../errors';
import type { Relay } from '../relay';
import { PROTOCOL_MIN_ROLE } from '../roles';
import type { Device } from '../store/devices';
import { isUniqueViolation, type Store } from '../store/index';
import type { SessionRow } from '../store/sessions';
import type { Principal } from '../store/tokens';

export const DEFAULT_TTL_S = 3600;

export interface OpenRequest {
  device_id: string;
  protocol: SessionProtocol;
  ttl_seconds?: number | undefined;
  /** A port-forward session's targets, canonical `HOST:PORT` (the routes check their form). */
  targets?: string[] | undefined;
}

export interface OpenerDeps {
  store: Store;
  relay: Relay;
  log: Logger;
  now: () => number;
  /** How long a session may have no client connected (s): a refused open says so. */
  idleSeconds: number;
}

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

/** Opens sessions; what follows an opening (its idle clock, its expiry, the relay) is the caller's. */
export function createOpener({ store, relay, log, now, idleSeconds }: OpenerDeps) {
  const iso = (ms: number) => new Date(ms).toISOString();

  /** The 409 of an open refused by the one-session-per-protocol rule: whose session it is, and since when. */
  async function heldBy(req: OpenRequest): Promise<ApiError> {
    const holder = await store.sessions.holderOf(req.device_id, req.protocol);
    const what = `a ${req.protocol} session is already open for device ${req.device_id}`;
    // Closed in the meantime: the caller may simply try again.
    if (!holder) return conflict(`${what}; it is closing now, try again`);
    const held: SessionHolder = { opened_by: holder.opened_by, opened_at: holder.opened_at };
    return new ApiError(
      'conflict',
      `${what}: ${holder.opened_by} opened it at ${holder.opened_at}. Its owner or an administrator can close it ` +
        `(DELETE /v1/remote-access/sessions/{id}); it also closes once no client has been connected to it for ${idleSeconds} s`,
      undefined,
      undefined,
      { holder: held },
    );
  }

  const openInTx = (row: Parameters<Store['sessions']['insert']>[0]) =>
    store.transaction(async (tx) => {
      await tx.sessions.insert(row);
      await tx.audit.append({
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

  /** Opens a session; checks run in the documented order: 403, 404, 503, 422, 409. */
  return async function openSession(principal: Principal, req: OpenRequest): Promise<SessionRow> {
    const minimum = PROTOCOL_MIN_ROLE[req.protocol];
    requireAccess(principal, 'sessions:write', minimum, `opening a ${req.protocol} session`);
    const device = await store.devices.get(req.device_id);
    if (!device) throw notFound(`no device ${req.device_id}`);
    const t = now();
    // A policy's 403 comes before the device's reachability: how to ask holds whether it is online or not.
    const grant = await requireGrant(store, principal, device, req.protocol, iso(t));
    if (relay.available?.() === false) {
      throw new ApiError('unavailable', 'the cluster bus (NATS) is unreachable, so no device can be reached now; retry once it is back', undefined, {
        'Retry-After': '5',
      });
    }
    if (device.agent_status !== 'online') {
      throw new ApiError(
        'unprocessable_entity',
        `the agent of device ${req.device_id} is offline (not connected to the broker); retry once its agent_status is online`,
      );
    }
    if (req.protocol === 'port-forward') checkTargets(device, req.targets ?? []);
    const asked = req.ttl_seconds ?? DEFAULT_TTL_S;
    // Under a grant the session ends with it at the latest (its whole life then, at least TTL_MIN_S as recorded).
    const expiresAt = Math.min(t + asked * 1000, grant ? Date.parse(grant.ends_at!) : Infinity);
    const ttl = expiresAt === t + asked * 1000 ? asked : Math.max(TTL_MIN_S, Math.round((expiresAt - t) / 1000));
    const row = {
      session_id: newSessionId(),
      device_id: req.device_id,
      protocol: req.protocol,
      ttl_seconds: ttl,
      opened_by: principal.username,
      token_id: principal.token_id,
      token_expires_at: principal.expires_at,
      opened_at: iso(t),
      expires_at: iso(expiresAt),
      trace_id: newTraceId(),
      targets: req.protocol === 'port-forward' ? (req.targets ?? []) : null,
      access_request_id: grant?.request_id ?? null,
    };
    try {
      await openInTx(row);
    } catch (err) {
      if (isUniqueViolation(err)) throw await heldBy(req);
      throw err;
    }
    const session = (await store.sessions.get(row.session_id))!;
    log.info('session opened', { session_id: session.session_id, trace_id: session.trace_id, user: principal.username });
    return session;
  };
}
