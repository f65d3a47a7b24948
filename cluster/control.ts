/**
 * @module The control node's side of the cluster (docs/cluster.md): `tether server` with
 * `TETHER_NATS_URL`. It answers the edges' questions from the API (agent tokens, stream
 * credentials), keeps which node holds each agent (by connection generation: a later connection
 * wins, and an end counts only for the connection it ends), writes presence in batches, notices
 * nodes that stop answering (their agents go offline unless they came back elsewhere within the
 * heartbeat deadline), routes `stream.open` to the node that holds the device, and broadcasts
 * what every node must act on.
 */
import {
  agentAuthRequest,
  bytesRequest,
  nodeHeartbeat,
  nodeSubject,
  presenceMessage,
  seenMessage,
  sentReply,
  streamAuthRequest,
  streamOpenRequest,
  SUBJECTS,
  type AgentOffline,
  type AgentOnline,
  type BroadcastMessage,
} from '../shared/cluster';
import type { BrokerToAgentMessage, CloseReason, SessionProtocol } from '../shared/control-channel';
import type { Logger } from '../shared/log';
import type { Metrics } from '../shared/metrics';
import type { RecordingPort } from '../shared/recording';
import type { StreamAccess } from '../shared/session-stream';
import type { Bus } from './bus';
import { HolderTable, type PresenceOutcome } from './holders';
import { followCluster } from './node';
import { deadlineOf, nodeHeartbeatOf, type LocalBroker } from './ports';
import { receiveRecordings } from './recording-link';

/** A presence change as the API records it. */
export type PresenceWrite =
  | { kind: 'online'; deviceId: string; agentVersion: string | null; forwardAllow: readonly string[] | null; at: string }
  | { kind: 'offline'; deviceId: string; at: string };

/** What the control node needs from the API. */
export interface ControlApi {
  authenticateAgent(deviceId: string, token: string): boolean;
  authorizeStream(sessionId: string, credentials: { ticket?: string; bearer?: string }): StreamAccess;
  presence: {
    apply(changes: readonly PresenceWrite[]): void;
    onlineIds(): string[];
    seen(lastSeen: Map<string, number>): void;
  };
  recordBytes(counts: Map<string, { toDevice: number; fromDevice: number }>): void;
  recordings: RecordingPort;
}

export interface ControlDeps {
  bus: Bus;
  nodeId: string;
  publicUrl: string;
  heartbeatMs: number;
  log: Logger;
  metrics: Metrics;
  now: () => number;
  api: ControlApi;
}

const PRESENCE_FLUSH_MS = 50;

/** What a node said about an agent, written to its device when its connection is the current one. */
interface AgentInfo {
  agentVersion: string | null;
  forwardAllow: string[] | null;
}
/** Broadcasts made while the bus is away wait for it, up to this many. */
const MAX_HELD_BROADCASTS = 10_000;

type StreamOpen = Extract<BrokerToAgentMessage, { type: 'stream.open' }>;

export function createControl(deps: ControlDeps) {
  const { bus, nodeId, log, api } = deps;
  const mono = () => performance.now();
  const deadline = deadlineOf(deps.heartbeatMs);
  let broker: LocalBroker | undefined;
  const holders = new HolderTable<AgentInfo>();
  /** `mismatches`: heartbeats in a row whose digest differed from the connections held for the node. */
  const nodes = new Map<string, { url: string; lastHeard: number; agents: number; mismatches: number }>();
  const snapshots = new Map<string, { node: string; devices: Set<string> }>();
  let writes = new Map<string, PresenceWrite>();
  let writeTimer: NodeJS.Timeout | undefined;
  let heldBroadcasts: BroadcastMessage[] = [];
  /** When presence left over from before this start is checked (once the edges had a deadline to resend theirs). */
  let startupSweepAt: number | undefined;
  let everUp = false;
  const timers: NodeJS.Timeout[] = [];
  let recordings: ReturnType<typeof receiveRecordings> | undefined;

  const presenceWrites = deps.metrics.counter('tether_cluster_presence_writes_total', 'Agent presence changes the control node wrote, by kind.');
  const onlineWrites = presenceWrites.series({ kind: 'online' });
  const offlineWrites = presenceWrites.series({ kind: 'offline' });
  const resyncs = deps.metrics.counter('tether_cluster_resyncs_total', 'Nodes asked to resend their presence because it differed from what they had reported.');
  const nodesLost = deps.metrics.counter('tether_cluster_nodes_lost_total', 'Nodes the control node declared gone (silent past the deadline).');
  deps.metrics.gauge('tether_cluster_nodes', 'Broker nodes in the cluster, this one included.', () => nodes.size + 1);
  deps.metrics.gauge('tether_cluster_agents', 'Agents online across the cluster, as the control node knows them.', () => holders.size);
  deps.metrics.gauge('tether_cluster_bus_up', '1 while this node is connected to NATS.', () => (bus.up() ? 1 : 0));

  const iso = (ms: number) => new Date(ms).toISOString();

  function flushWrites(): void {
    clearTimeout(writeTimer);
    writeTimer = undefined;
    if (writes.size === 0) return;
    const batch = [...writes.values()];
    writes = new Map();
    try {
      api.presence.apply(batch);
      for (const w of batch) (w.kind === 'online' ? onlineWrites : offlineWrites).inc();
    } catch (err) {
      log.error('could not write agent presence', { err: (err as Error).message, changes: batch.length });
    }
  }

  function write(change: PresenceWrite): void {
    writes.set(change.deviceId, change); // the latest state of a device is what counts
    writeTimer ??= setTimeout(flushWrites, PRESENCE_FLUSH_MS);
  }

  /** Writes what a change of a device's connections amounts to: online through its latest one, or offline. */
  function record(deviceId: string, outcome: PresenceOutcome<AgentInfo>, at: number): void {
    if (outcome.kind === 'offline') write({ kind: 'offline', deviceId, at: iso(at) });
    else if (outcome.kind === 'online') {
      const { info, since } = outcome.current;
      write({ kind: 'online', deviceId, agentVersion: info!.agentVersion, forwardAllow: info!.forwardAllow, at: iso(since) });
    }
  }

  function online(node: string, a: AgentOnline): void {
    const info = { agentVersion: a.agent_version, forwardAllow: a.forward_allow };
    record(a.device_id, holders.online(a.device_id, { node, generation: a.generation, since: a.since, info }), a.since);
  }

  function offline(node: string, a: AgentOffline): void {
    record(a.device_id, holders.offline(a.device_id, { node, generation: a.generation }), a.at);
  }

  /** Agents of `node` that are not in `still` go offline, unless held elsewhere (a snapshot's end, or the node's loss). */
  function dropAgentsOf(node: string, still?: ReadonlySet<string>): number {
    const outcomes = holders.dropNode(node, still);
    const at = deps.now();
    let offline = 0;
    for (const [deviceId, outcome] of outcomes) {
      record(deviceId, outcome, at);
      if (outcome.kind === 'offline') offline++;
    }
    return offline;
  }

  function broadcast(msg: BroadcastMessage): void {
    if (bus.publish(SUBJECTS.broadcast, msg)) return;
    if (heldBroadcasts.length < MAX_HELD_BROADCASTS) heldBroadcasts.push(msg);
    else log.error('the cluster bus is away and too much waits for it; a broadcast is lost', { type: msg.type });
  }

  /** Sends `stream.open` to the device through the node that holds it; true when that node handed it over. */
  async function routeStream(deviceId: string, msg: StreamOpen): Promise<boolean> {
    if (broker?.sendToAgent(deviceId, msg)) return true;
    const holder = holders.holder(deviceId);
    if (!holder || holder.node === nodeId) return false;
    const reply = await bus.request(nodeSubject(holder.node), { type: 'agent.send', device_id: deviceId, message: msg }, sentReply);
    return reply.sent;
  }

  function sweep(): void {
    if (!bus.up()) return; // silence is the bus's, not the nodes'
    const t = mono();
    for (const [id, n] of nodes) {
      if (t - n.lastHeard <= deadline) continue;
      nodes.delete(id);
      nodesLost.inc();
      const dropped = dropAgentsOf(id);
      recordings?.nodeGone(id);
      log.warn('a broker node stopped answering; its agents that did not come back elsewhere are offline', { node_id: id, url: n.url, offline: dropped });
    }
    if (startupSweepAt !== undefined && t >= startupSweepAt) {
      startupSweepAt = undefined;
      let stale = 0;
      for (const deviceId of api.presence.onlineIds()) {
        if (holders.holder(deviceId) || writes.get(deviceId)?.kind === 'online') continue;
        write({ kind: 'offline', deviceId, at: iso(deps.now()) });
        stale++;
      }
      if (stale > 0) log.info('agents online before this start did not come back within the deadline; offline now', { offline: stale });
    }
  }

  function listen(): void {
    bus.on(SUBJECTS.agentAuth, agentAuthRequest, ({ body, reply }) => reply({ ok: api.authenticateAgent(body.device_id, body.token) }));
    bus.on(SUBJECTS.streamAuth, streamAuthRequest, ({ body, reply }) => {
      const credentials = { ...(body.ticket !== undefined && { ticket: body.ticket }), ...(body.bearer !== undefined && { bearer: body.bearer }) };
      reply(api.authorizeStream(body.session_id, credentials));
    });
    bus.on(SUBJECTS.streamOpen, streamOpenRequest, ({ body, reply }) => {
      if (body.message.type !== 'stream.open') return reply({ sent: false });
      routeStream(body.device_id, body.message).then(
        (sent) => reply({ sent }),
        () => reply({ sent: false }),
      );
    });
    bus.on(SUBJECTS.node, nodeHeartbeat, ({ body, reply }) => {
      if (body.node_id === nodeId) return;
      const node = nodes.get(body.node_id);
      // A digest that differs on two heartbeats in a row is no report in flight: some were lost.
      const mismatches = body.digest !== undefined && body.digest !== holders.digest(body.node_id) ? (node?.mismatches ?? 0) + 1 : 0;
      const lost = mismatches >= 2;
      nodes.set(body.node_id, { url: body.url, lastHeard: mono(), agents: body.agents, mismatches: lost ? 0 : mismatches });
      if (!node) log.info('a broker node joined', { node_id: body.node_id, url: body.url, agents: body.agents });
      if (lost) {
        resyncs.inc();
        log.warn('a node\'s presence differs from what it reported; asking it to resend', { node_id: body.node_id, agents: body.agents });
      }
      reply({ control_id: nodeId, resync: !node || lost });
    });
    bus.on(SUBJECTS.presence, presenceMessage, ({ body }) => {
      if (body.node_id === nodeId) return;
      const node = nodes.get(body.node_id);
      if (node) node.lastHeard = mono();
      for (const a of body.online) online(body.node_id, a);
      if (body.kind === 'changes') {
        for (const a of body.offline) offline(body.node_id, a);
        return;
      }
      let snap = snapshots.get(body.snapshot_id);
      if (!snap) snapshots.set(body.snapshot_id, (snap = { node: body.node_id, devices: new Set() }));
      for (const a of body.online) snap.devices.add(a.device_id);
      if (body.last) {
        snapshots.delete(body.snapshot_id);
        const dropped = dropAgentsOf(body.node_id, snap.devices);
        log.info('a node resent its presence', { node_id: body.node_id, agents: snap.devices.size, gone_meanwhile: dropped });
      }
    });
    bus.on(SUBJECTS.seen, seenMessage, ({ body }) => api.presence.seen(new Map(body.seen)));
    bus.on(SUBJECTS.bytes, bytesRequest, ({ body, reply }) => {
      api.recordBytes(new Map(body.counts.map(([id, toDevice, fromDevice]) => [id, { toDevice, fromDevice }])));
      reply({ ok: true });
    });
    recordings = receiveRecordings(bus, api.recordings, log);
  }

  return {
    /** The local broker's presence: held by this node, written like any other node's. */
    presence: {
      online(deviceId: string, agentVersion: string | null, at: number, forwardAllow: readonly string[] | null, generation: number): void {
        online(nodeId, { device_id: deviceId, generation, since: at, agent_version: agentVersion, forward_allow: forwardAllow ? [...forwardAllow] : null });
      },
      offline(deviceId: string, at: number, generation: number): void {
        offline(nodeId, { device_id: deviceId, generation, at });
      },
      seen: (lastSeen: Map<string, number>) => api.presence.seen(lastSeen),
    },

    /** For the local broker: a device held elsewhere gets `stream.open` through its node, to dial here. */
    routeStream: (deviceId: string, msg: StreamOpen) => routeStream(deviceId, { ...msg, url: deps.publicUrl }),

    onStreamRefusedElsewhere(deviceId: string, streamId: string, message: string): void {
      broadcast({ type: 'stream.refused', device_id: deviceId, stream_id: streamId, message });
    },

    /** What the API tells the relay, for every node. */
    relay: {
      sessionOpened(s: { session_id: string; device_id: string; protocol: SessionProtocol; expires_at: string }): void {
        broker?.sessionOpened(s);
        broadcast({ type: 'session.opened', session_id: s.session_id, device_id: s.device_id, protocol: s.protocol, expires_at: s.expires_at });
      },
      sessionClosed(s: { session_id: string; device_id: string }, reason: CloseReason): void {
        broker?.sessionClosed(s, reason);
        broadcast({ type: 'session.closed', session_id: s.session_id, device_id: s.device_id, reason });
      },
      deviceDeleted(deviceId: string): void {
        broker?.deviceDeleted(deviceId);
        broadcast({ type: 'device.deleted', device_id: deviceId });
      },
      agentTokenRotated(deviceId: string): void {
        broker?.agentTokenRotated(deviceId);
        broadcast({ type: 'device.token_rotated', device_id: deviceId });
      },
      tokenRevoked(tokenId: string): void {
        broker?.tokenRevoked(tokenId);
        broadcast({ type: 'token.revoked', token_id: tokenId });
      },
      /** Sessions can be opened only while the bus is up. */
      available: () => bus.up(),
    },

    /** The bus came up (first time, or back after an outage): every node resends its presence. */
    busUp(): void {
      const t = mono();
      for (const n of nodes.values()) n.lastHeard = t; // they could not speak meanwhile
      const held = heldBroadcasts;
      heldBroadcasts = [];
      for (const msg of held) broadcast(msg);
      broadcast({ type: 'resync', control_id: nodeId });
      if (!everUp) {
        everUp = true;
        startupSweepAt = t + deadline;
      }
    },

    busDown(): void {},

    start(localBroker: LocalBroker): void {
      broker = localBroker;
      listen();
      followCluster({ bus, nodeId, broker: localBroker, log, onBroadcast: () => {} });
      timers.push(setInterval(sweep, nodeHeartbeatOf(deps.heartbeatMs)));
      bus.start();
    },

    async close(): Promise<void> {
      for (const t of timers) clearInterval(t);
      flushWrites();
      recordings?.close();
      await bus.close();
    },
  };
}
export type Control = ReturnType<typeof createControl>;
