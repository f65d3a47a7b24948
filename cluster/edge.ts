/**
 * @module An edge node's side of the cluster (docs/cluster.md): what its broker needs from a
 * database it does not have, asked of the control node over NATS. Credentials are checked by
 * request (answers kept a short while, dropped at once by the broadcasts that change them);
 * presence goes out as changes with connection generations and, whenever the control node may
 * have missed some (it restarted, the bus was away), as a full snapshot; byte counts are sent
 * until acknowledged. An edge cut from the bus past the agents' heartbeat deadline lets its
 * agents go, so that they reconnect to a node that can vouch for them.
 */
import { createHash } from 'node:crypto';
import {
  agentAuthReply,
  nodeHeartbeatReply,
  okReply,
  sentReply,
  streamAuthReply,
  SUBJECTS,
  type AgentOffline,
  type AgentOnline,
  type BroadcastMessage,
} from '../shared/cluster';
import type { BrokerToAgentMessage } from '../shared/control-channel';
import { randomBase32 } from '../shared/ids';
import type { Logger } from '../shared/log';
import type { Metrics } from '../shared/metrics';
import type { StreamAccess } from '../shared/session-stream';
import type { Bus } from './bus';
import { digestOf } from './holders';
import { followCluster } from './node';
import { deadlineOf, nodeHeartbeatOf, type LocalBroker } from './ports';
import { publishedRecordings } from './recording-link';

/** How long a proven agent token is taken on trust without asking again. */
export const AGENT_AUTH_CACHE_MS = 60_000;
/** How long a stream grant is reused for the same credentials. */
export const STREAM_AUTH_CACHE_MS = 5_000;
/** Presence changes and seen times go out in parts of at most this many (NATS caps a message at 1 MiB). */
const PART = 2_000;
const PRESENCE_FLUSH_MS = 50;
const BYTES_FLUSH_MS = 1_000;

export interface EdgeDeps {
  bus: Bus;
  nodeId: string;
  /** The node's public URL: agents dial it for the streams of clients that joined here. */
  publicUrl: string;
  heartbeatMs: number;
  log: Logger;
  metrics: Metrics;
}

const digest = (text: string) => createHash('sha256').update(text).digest('base64url');

type StreamOpen = Extract<BrokerToAgentMessage, { type: 'stream.open' }>;

export function createEdge(deps: EdgeDeps) {
  const { bus, nodeId, log } = deps;
  const mono = () => performance.now();
  const deadline = deadlineOf(deps.heartbeatMs);
  let broker: LocalBroker | undefined;

  // caches
  const agentProofs = new Map<string, { deviceId: string; until: number }>();
  const grants = new Map<string, { grant: Extract<StreamAccess, { ok: true }>['grant']; until: number }>();

  // presence
  let pendingOnline: AgentOnline[] = [];
  let pendingOffline: AgentOffline[] = [];
  let presenceTimer: NodeJS.Timeout | undefined;
  /** The control node may have missed changes: the next heartbeat answer sends a snapshot. */
  let needSnapshot = true;
  let controlId: string | undefined;

  // byte counts not yet acknowledged
  let bytes = new Map<string, { toDevice: number; fromDevice: number }>();
  let bytesInFlight = false;

  let downSince: number | undefined = mono();
  let agentsReleased = false;
  let closed = false;
  const timers: NodeJS.Timeout[] = [];

  const snapshotsSent = deps.metrics.counter('tether_cluster_snapshots_total', 'Presence snapshots this node sent to the control node.');

  function flushPresence(): void {
    clearTimeout(presenceTimer);
    presenceTimer = undefined;
    const online = pendingOnline;
    const offline = pendingOffline;
    pendingOnline = [];
    pendingOffline = [];
    for (let i = 0; i < Math.max(online.length, offline.length); i += PART) {
      const sent = bus.publish(SUBJECTS.presence, {
        kind: 'changes',
        node_id: nodeId,
        online: online.slice(i, i + PART),
        offline: offline.slice(i, i + PART),
      });
      // Lost on the way: the control node gets the whole picture once it answers again.
      if (!sent) needSnapshot = true;
    }
  }

  function queuePresence(): void {
    presenceTimer ??= setTimeout(flushPresence, PRESENCE_FLUSH_MS);
  }

  function sendSnapshot(): void {
    if (!broker) return;
    needSnapshot = false;
    flushPresence();
    const all: AgentOnline[] = [];
    for (const a of broker.agents()) {
      all.push({ device_id: a.deviceId, generation: a.generation, since: a.since, agent_version: a.agentVersion, forward_allow: a.forwardAllow ? [...a.forwardAllow] : null });
    }
    const snapshotId = randomBase32(16);
    let i = 0;
    do {
      const part = all.slice(i, i + PART);
      i += PART;
      if (!bus.publish(SUBJECTS.presence, { kind: 'snapshot', node_id: nodeId, snapshot_id: snapshotId, online: part, last: i >= all.length })) {
        needSnapshot = true;
        return;
      }
    } while (i < all.length);
    snapshotsSent.inc();
    log.info('sent the control node a presence snapshot', { agents: all.length });
  }

  async function heartbeat(): Promise<void> {
    if (!bus.up() || !broker) return;
    // Changes go out first: the control node has them before the heartbeat whose digest covers them.
    flushPresence();
    try {
      const reply = await bus.request(
        SUBJECTS.node,
        { node_id: nodeId, url: deps.publicUrl, agents: broker.agentCount(), digest: digestOf(broker.agents()) },
        nodeHeartbeatReply,
      );
      if (reply.control_id !== controlId) {
        if (controlId !== undefined) log.info('the control node changed; resending presence', { control_id: reply.control_id });
        controlId = reply.control_id;
        needSnapshot = true;
      }
      if (reply.resync || needSnapshot) sendSnapshot();
    } catch (err) {
      // Nobody answered: whatever changes are published now may be lost.
      log.debug('the control node did not answer a heartbeat', { err: (err as Error).message });
      needSnapshot = true;
    }
  }

  /** Past the deadline without the bus, agents go where they can be vouched for. */
  function checkCut(): void {
    if (downSince === undefined || agentsReleased || !broker || controlId === undefined) return;
    if (mono() - downSince < deadline) return;
    agentsReleased = true;
    log.warn('cut from the cluster bus past the heartbeat deadline; letting the agents go to other nodes', { down_ms: Math.round(mono() - downSince) });
    broker.disconnectAgents(1001, 'this node lost its cluster; reconnect to another');
  }

  async function flushBytes(): Promise<void> {
    if (bytesInFlight || bytes.size === 0 || !bus.up()) return;
    const sending = bytes;
    bytes = new Map();
    bytesInFlight = true;
    try {
      await bus.request(SUBJECTS.bytes, { counts: [...sending].map(([id, c]) => [id, c.toDevice, c.fromDevice]) }, okReply);
    } catch {
      // Not acknowledged: counted again with the next ones.
      for (const [id, c] of sending) addBytes(id, c);
    } finally {
      bytesInFlight = false;
    }
  }

  function addBytes(sessionId: string, c: { toDevice: number; fromDevice: number }): void {
    const sum = bytes.get(sessionId);
    if (sum) {
      sum.toDevice += c.toDevice;
      sum.fromDevice += c.fromDevice;
    } else bytes.set(sessionId, { ...c });
  }

  function prune(): void {
    const t = mono();
    for (const [k, v] of agentProofs) if (v.until <= t) agentProofs.delete(k);
    for (const [k, v] of grants) if (v.until <= t) grants.delete(k);
  }

  function forget(msg: BroadcastMessage): void {
    switch (msg.type) {
      case 'session.closed':
        for (const [k, v] of grants) if (v.grant.sessionId === msg.session_id) grants.delete(k);
        break;
      case 'token.revoked':
        for (const [k, v] of grants) if (v.grant.tokenId === msg.token_id) grants.delete(k);
        break;
      case 'device.token_rotated':
        for (const [k, v] of agentProofs) if (v.deviceId === msg.device_id) agentProofs.delete(k);
        break;
      case 'device.deleted':
        for (const [k, v] of agentProofs) if (v.deviceId === msg.device_id) agentProofs.delete(k);
        for (const [k, v] of grants) if (v.grant.deviceId === msg.device_id) grants.delete(k);
        break;
      case 'resync':
        needSnapshot = true;
        void heartbeat();
        break;
      default:
        break;
    }
  }

  const brokerDeps = {
    async authenticateAgent(deviceId: string, token: string): Promise<boolean> {
      const key = `${deviceId}\n${digest(token)}`;
      const cached = agentProofs.get(key);
      if (cached && cached.until > mono()) return true;
      const reply = await bus.request(SUBJECTS.agentAuth, { device_id: deviceId, token }, agentAuthReply);
      if (reply.ok) agentProofs.set(key, { deviceId, until: mono() + AGENT_AUTH_CACHE_MS });
      return reply.ok;
    },

    async authorizeStream(sessionId: string, credentials: { ticket?: string; bearer?: string }): Promise<StreamAccess> {
      const key = `${sessionId}\n${credentials.ticket ? `t:${digest(credentials.ticket)}` : ''}\n${credentials.bearer ? `b:${digest(credentials.bearer)}` : ''}`;
      const cached = grants.get(key);
      const now = Date.now();
      const fresh = (g: { expiresAt: string; tokenExpiresAt?: string | undefined }) =>
        Date.parse(g.expiresAt) > now && (g.tokenExpiresAt === undefined || Date.parse(g.tokenExpiresAt) > now);
      if (cached && cached.until > mono() && fresh(cached.grant)) return { ok: true, grant: cached.grant };
      const reply = await bus.request(
        SUBJECTS.streamAuth,
        { session_id: sessionId, ...(credentials.ticket !== undefined && { ticket: credentials.ticket }), ...(credentials.bearer !== undefined && { bearer: credentials.bearer }) },
        streamAuthReply,
      );
      if (reply.ok) grants.set(key, { grant: reply.grant, until: mono() + STREAM_AUTH_CACHE_MS });
      return reply;
    },

    presence: {
      online(deviceId: string, agentVersion: string | null, at: number, forwardAllow: readonly string[] | null, generation: number): void {
        pendingOnline.push({ device_id: deviceId, generation, since: at, agent_version: agentVersion, forward_allow: forwardAllow ? [...forwardAllow] : null });
        queuePresence();
      },
      offline(deviceId: string, at: number, generation: number): void {
        pendingOffline.push({ device_id: deviceId, generation, at });
        queuePresence();
      },
      seen(lastSeen: Map<string, number>): void {
        const all = [...lastSeen];
        for (let i = 0; i < all.length; i += PART) bus.publish(SUBJECTS.seen, { node_id: nodeId, seen: all.slice(i, i + PART) });
      },
    },

    recordBytes(counts: Map<string, { toDevice: number; fromDevice: number }>): void {
      for (const [id, c] of counts) addBytes(id, c);
    },

    recordings: publishedRecordings(bus, nodeId, log),

    /** The agent is on another node: the control node asks that node to send it `stream.open`, to dial here. */
    async routeStream(deviceId: string, msg: StreamOpen): Promise<boolean> {
      const reply = await bus.request(SUBJECTS.streamOpen, { device_id: deviceId, message: { ...msg, url: deps.publicUrl } }, sentReply);
      return reply.sent;
    },

    onStreamRefusedElsewhere(deviceId: string, streamId: string, message: string): void {
      bus.publish(SUBJECTS.broadcast, { type: 'stream.refused', device_id: deviceId, stream_id: streamId, message });
    },
  };

  return {
    brokerDeps,

    /** Whether the bus is up (the health check says so). */
    up: () => bus.up(),

    /** The bus came up: the control node hears of every agent here again. */
    busUp(): void {
      downSince = undefined;
      agentsReleased = false;
      needSnapshot = true;
      void heartbeat();
    },

    busDown(): void {
      downSince ??= mono();
    },

    /** Starts following the cluster with this broker. */
    start(localBroker: LocalBroker): void {
      broker = localBroker;
      followCluster({ bus, nodeId, broker: localBroker, log, onBroadcast: forget });
      const beat = nodeHeartbeatOf(deps.heartbeatMs);
      timers.push(
        setInterval(() => {
          void heartbeat();
          checkCut();
        }, beat),
        setInterval(() => void flushBytes(), BYTES_FLUSH_MS),
        setInterval(prune, 10_000),
      );
      bus.start();
    },

    /** Stops the timers, sends the last counts and presence, and closes the bus. */
    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      for (const t of timers) clearInterval(t);
      flushPresence();
      await flushBytes();
      await bus.close();
    },
  };
}
export type Edge = ReturnType<typeof createEdge>;
