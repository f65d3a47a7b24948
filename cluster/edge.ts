/**
 * @module An edge node's side of the cluster (docs/cluster.md): what its broker needs from a
 * database it does not have, asked of the control node over NATS. Agents are vouched for by the
 * node's proof that it saw their token (never the token itself), clients by digests of their
 * ticket or bearer token; answers are kept a short while and dropped at once by the broadcasts
 * that change them. Presence goes out as changes with connection generations and, whenever the
 * control node may have missed some (it restarted, the bus was away), as a full snapshot; byte
 * counts are sent until acknowledged. An edge cut from the bus past the agents' heartbeat
 * deadline lets its agents go, so that they reconnect to a node that can vouch for them.
 */
import {
  agentAuthReply,
  CONTROL_VERBS,
  controlSubject,
  nodeHeartbeatReply,
  okReply,
  PART,
  sentReply,
  streamAuthReply,
  type AgentOffline,
  type AgentOnline,
  type BroadcastMessage,
  type ControlVerb,
} from '../shared/cluster';
import { agentKey, nodeAgentProof } from '../shared/agent-proofs';
import type { BrokerToAgentMessage } from '../shared/control-channel';
import { randomBase32, sha256Hex } from '../shared/ids';
import type { Logger } from '../shared/log';
import type { Metrics } from '../shared/metrics';
import type { StreamAccess } from '../shared/session-stream';
import { ticketDigest as ticketDigestOf } from '../shared/tickets';
import type { AgentCredential } from '../shared/agent-proofs';
import type { Bus } from './bus';
import { digestOf } from './holders';
import { followCluster } from './node';
import { deadlineOf, nodeHeartbeatOf, type LocalBroker } from './ports';
import { publishedRecordings } from './recording-link';

/** How long a proven agent token is taken on trust without asking again. */
export const AGENT_AUTH_CACHE_MS = 60_000;
/** How long a stream grant is reused for the same credentials. */
export const STREAM_AUTH_CACHE_MS = 5_000;
const PRESENCE_FLUSH_MS = 50;
const BYTES_FLUSH_MS = 1_000;

export interface EdgeDeps {
  bus: Bus;
  /** The node's name (from its credentials): the subjects it may speak on. */
  nodeName: string;
  /** This run's id: the name and 8 random characters. */
  nodeId: string;
  /** The node's public URL: agents dial it for the streams of clients that joined here. */
  publicUrl: string;
  heartbeatMs: number;
  log: Logger;
  metrics: Metrics;
}

type StreamOpen = Extract<BrokerToAgentMessage, { type: 'stream.open' }>;

export function createEdge(deps: EdgeDeps) {
  const { bus, nodeId, nodeName, log } = deps;
  const subject = (verb: ControlVerb) => controlSubject(nodeName, verb);
  const mono = () => performance.now();
  const deadline = deadlineOf(deps.heartbeatMs);
  let broker: LocalBroker | undefined;

  // caches
  const agentProofs = new Map<string, { deviceId: string; until: number }>();
  /** The node proof of each device whose agent this node admitted, sent with its presence. */
  const heldProofs = new Map<string, { proof: string; at: number }>();
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

  // clients of session streams here, for the control node's idle sessions
  const clientsHere = new Set<string>();
  let clientChanges = new Map<string, boolean>();
  let clientsTimer: NodeJS.Timeout | undefined;

  function flushClients(all = false): void {
    clearTimeout(clientsTimer);
    clientsTimer = undefined;
    const changes = all ? new Map([...clientsHere].map((id) => [id, true] as const)) : clientChanges;
    clientChanges = new Map();
    const attached = [...changes].filter(([, on]) => on).map(([id]) => id);
    const detached = [...changes].filter(([, on]) => !on).map(([id]) => id);
    for (let i = 0; i < Math.max(attached.length, detached.length); i += PART) {
      bus.publish(subject(CONTROL_VERBS.streams), { attached: attached.slice(i, i + PART), detached: detached.slice(i, i + PART) });
    }
  }

  function queueClients(sessionId: string, attached: boolean): void {
    if (attached) clientsHere.add(sessionId);
    else clientsHere.delete(sessionId);
    clientChanges.set(sessionId, attached);
    clientsTimer ??= setTimeout(flushClients, PRESENCE_FLUSH_MS);
  }

  const snapshotsSent = deps.metrics.counter('tether_cluster_snapshots_total', 'Presence snapshots this node sent to the control node.');

  function flushPresence(): void {
    clearTimeout(presenceTimer);
    presenceTimer = undefined;
    const online = pendingOnline;
    const offline = pendingOffline;
    pendingOnline = [];
    pendingOffline = [];
    for (let i = 0; i < Math.max(online.length, offline.length); i += PART) {
      const sent = bus.publish(subject(CONTROL_VERBS.presence), {
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
      all.push({
        device_id: a.deviceId,
        generation: a.generation,
        since: a.since,
        agent_version: a.agentVersion,
        forward_allow: a.forwardAllow ? [...a.forwardAllow] : null,
        proof: proofOf(a.deviceId),
      });
    }
    const snapshotId = randomBase32(16);
    let i = 0;
    do {
      const part = all.slice(i, i + PART);
      i += PART;
      if (!bus.publish(subject(CONTROL_VERBS.presence), { kind: 'snapshot', node_id: nodeId, snapshot_id: snapshotId, online: part, last: i >= all.length })) {
        needSnapshot = true;
        return;
      }
    } while (i < all.length);
    snapshotsSent.inc();
    flushClients(true);
    log.info('sent the control node a presence snapshot', { agents: all.length });
  }

  async function heartbeat(): Promise<void> {
    if (!bus.up() || !broker) return;
    // Changes go out first: the control node has them before the heartbeat whose digest covers them.
    flushPresence();
    try {
      const reply = await bus.request(
        subject(CONTROL_VERBS.node),
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
      await bus.request(subject(CONTROL_VERBS.bytes), { counts: [...sending].map(([id, c]) => [id, c.toDevice, c.fromDevice]) }, okReply);
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
    const held = new Set<string>();
    for (const a of broker?.agents() ?? []) held.add(a.deviceId);
    for (const [k, v] of heldProofs) if (!held.has(k) && t - v.at > AGENT_AUTH_CACHE_MS) heldProofs.delete(k);
  }

  /** The proof sent with a device's presence (empty when the node never proved it: the control node refuses it). */
  const proofOf = (deviceId: string): string => heldProofs.get(deviceId)?.proof ?? '';

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
        heldProofs.delete(msg.device_id);
        break;
      case 'device.deleted':
        for (const [k, v] of agentProofs) if (v.deviceId === msg.device_id) agentProofs.delete(k);
        heldProofs.delete(msg.device_id);
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
    /**
     * An agent's token (its control channel) becomes the node's proof, which the control node
     * checks; a data stream's proof goes as it came (it is bound to its stream already).
     */
    async authenticateAgent(deviceId: string, credential: AgentCredential): Promise<boolean> {
      if ('streamId' in credential) {
        const reply = await bus.request(subject(CONTROL_VERBS.agentAuth), { device_id: deviceId, proof: credential.proof, stream_id: credential.streamId }, agentAuthReply);
        return reply.ok;
      }
      const proof = nodeAgentProof(agentKey(credential.token), nodeName, deviceId);
      const key = `${deviceId}\n${proof}`;
      const cached = agentProofs.get(key);
      let ok = cached !== undefined && cached.until > mono();
      if (!ok) {
        ok = (await bus.request(subject(CONTROL_VERBS.agentAuth), { device_id: deviceId, proof }, agentAuthReply)).ok;
        if (ok) agentProofs.set(key, { deviceId, until: mono() + AGENT_AUTH_CACHE_MS });
      }
      if (ok) heldProofs.set(deviceId, { proof, at: mono() });
      return ok;
    },

    async authorizeStream(sessionId: string, credentials: { ticket?: string; bearer?: string }): Promise<StreamAccess> {
      const ticketDigest = credentials.ticket === undefined ? undefined : ticketDigestOf(credentials.ticket);
      const bearerDigest = credentials.bearer === undefined ? undefined : sha256Hex(credentials.bearer);
      const key = `${sessionId}\n${ticketDigest ?? ''}\n${bearerDigest ?? ''}`;
      const cached = grants.get(key);
      const now = Date.now();
      const fresh = (g: { expiresAt: string; tokenExpiresAt?: string | undefined }) =>
        Date.parse(g.expiresAt) > now && (g.tokenExpiresAt === undefined || Date.parse(g.tokenExpiresAt) > now);
      if (cached && cached.until > mono() && fresh(cached.grant)) return { ok: true, grant: cached.grant };
      const reply = await bus.request(
        subject(CONTROL_VERBS.streamAuth),
        { session_id: sessionId, ...(ticketDigest !== undefined && { ticket_digest: ticketDigest }), ...(bearerDigest !== undefined && { bearer_digest: bearerDigest }) },
        streamAuthReply,
      );
      if (reply.ok) grants.set(key, { grant: reply.grant, until: mono() + STREAM_AUTH_CACHE_MS });
      return reply;
    },

    presence: {
      online(deviceId: string, agentVersion: string | null, at: number, forwardAllow: readonly string[] | null, generation: number): void {
        pendingOnline.push({
          device_id: deviceId,
          generation,
          since: at,
          agent_version: agentVersion,
          forward_allow: forwardAllow ? [...forwardAllow] : null,
          proof: proofOf(deviceId),
        });
        queuePresence();
      },
      offline(deviceId: string, at: number, generation: number): void {
        pendingOffline.push({ device_id: deviceId, generation, at });
        queuePresence();
      },
      seen(lastSeen: Map<string, number>): void {
        const all = [...lastSeen];
        for (let i = 0; i < all.length; i += PART) bus.publish(subject(CONTROL_VERBS.seen), { node_id: nodeId, seen: all.slice(i, i + PART) });
      },
    },

    recordBytes(counts: Map<string, { toDevice: number; fromDevice: number }>): void {
      for (const [id, c] of counts) addBytes(id, c);
    },

    recordings: publishedRecordings(bus, nodeName, log),

    /** The agent is on another node: the control node sends it `stream.open` (signed) through its node, to dial here. */
    async routeStream(_deviceId: string, msg: StreamOpen): Promise<boolean> {
      const reply = await bus.request(subject(CONTROL_VERBS.streamOpen), { session_id: msg.session_id, stream_id: msg.stream_id }, sentReply);
      return reply.sent;
    },

    onStreamRefusedElsewhere(deviceId: string, streamId: string, message: string): void {
      bus.publish(subject(CONTROL_VERBS.streamRefused), { device_id: deviceId, stream_id: streamId, message: message.slice(0, 200) });
    },

    /** Clients joined or left session streams here (batched like presence). */
    streamClients: {
      attached: (sessionId: string) => queueClients(sessionId, true),
      detached: (sessionId: string) => queueClients(sessionId, false),
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
      followCluster({ bus, nodeName, broker: localBroker, log, onBroadcast: forget });
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
      flushClients();
      await flushBytes();
      await bus.close();
    },
  };
}
export type Edge = ReturnType<typeof createEdge>;
