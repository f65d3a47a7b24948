/**
 * @module The control node's picture of where agents are (docs/cluster.md, presence): which node
 * holds each agent, by connection generation (a later connection wins, and an end counts only for
 * the connection it ends), written to the database in batches; the nodes alive, one run per node
 * name; and the sweep that lets go the agents of nodes that stopped answering.
 *
 * A node speaks only for itself: what it reports is taken for the runs of its own name (the
 * subject says the name), an agent it reports online must come with the node's proof that it saw
 * the device's token, and it may report last-seen times only of agents it holds. So no node can
 * pin a device to itself, or make the control node keep agents that do not exist.
 */
import {
  CONTROL_VERBS,
  isRunOf,
  nodeHeartbeat,
  presenceMessage,
  seenMessage,
  type AgentOffline,
  type AgentOnline,
} from '../shared/cluster';
import { nodeAgentProof, proofMatches } from '../shared/agent-proofs';
import type { Logger } from '../shared/log';
import type { Metrics } from '../shared/metrics';
import type { Bus } from './bus';
import { HolderTable, type PresenceOutcome } from './holders';
import { deadlineOf } from './ports';

/** A presence change as the API records it. */
export type PresenceWrite =
  | { kind: 'online'; deviceId: string; agentVersion: string | null; forwardAllow: readonly string[] | null; at: string }
  | { kind: 'offline'; deviceId: string; at: string };

export interface PresenceApi {
  apply(changes: readonly PresenceWrite[]): void;
  onlineIds(): string[];
  seen(lastSeen: Map<string, number>): void;
}

/** What a node said about an agent, written to its device when its connection is the current one. */
interface AgentInfo {
  agentVersion: string | null;
  forwardAllow: string[] | null;
}

/** A node the control node hears from: its current run, where it is reached, when it was last heard. */
interface NodeState {
  run: string;
  url: string | undefined;
  lastHeard: number;
  agents: number;
  /** Heartbeats in a row whose digest differed from the connections held for the run. */
  mismatches: number;
  /** A presence snapshot being received (one at a time per node). */
  snapshot?: { id: string; devices: Set<string> };
}

const PRESENCE_FLUSH_MS = 50;
/** Node names the control node keeps at once (with credentials, one per credentials file). */
const MAX_NODES = 1_000;

export interface ControlPresenceDeps {
  bus: Bus;
  /** This control node's run id (its own broker's connections are held under it). */
  run: string;
  heartbeatMs: number;
  log: Logger;
  metrics: Metrics;
  now: () => number;
  api: PresenceApi;
  /** The SHA-256 of a device's agent token, the key of its proofs; undefined: no such device. */
  agentKey(deviceId: string): string | undefined;
  /** A node's run ended (it stopped answering, or started again): what it held elsewhere goes too. */
  onNodeGone(name: string): void;
}

export function createControlPresence(deps: ControlPresenceDeps) {
  const { bus, log, api } = deps;
  const mono = () => performance.now();
  const deadline = deadlineOf(deps.heartbeatMs);
  const holders = new HolderTable<AgentInfo>();
  const nodes = new Map<string, NodeState>();
  let writes = new Map<string, PresenceWrite>();
  let writeTimer: NodeJS.Timeout | undefined;
  /** When presence left over from before this start is checked (once the edges had a deadline to resend theirs). */
  let startupSweepAt: number | undefined;

  const presenceWrites = deps.metrics.counter('tether_cluster_presence_writes_total', 'Agent presence changes the control node wrote, by kind.');
  const onlineWrites = presenceWrites.series({ kind: 'online' });
  const offlineWrites = presenceWrites.series({ kind: 'offline' });
  const resyncs = deps.metrics.counter('tether_cluster_resyncs_total', 'Nodes asked to resend their presence because it differed from what they had reported.');
  const nodesLost = deps.metrics.counter('tether_cluster_nodes_lost_total', 'Nodes the control node declared gone (silent past the deadline).');
  const refused = deps.metrics.counter('tether_cluster_refused_total', 'Messages from nodes the control node refused: not about what the node holds, or without proof.');
  deps.metrics.gauge('tether_cluster_nodes', 'Broker nodes in the cluster, this one included.', () => nodes.size + 1);
  deps.metrics.gauge('tether_cluster_agents', 'Agents online across the cluster, as the control node knows them.', () => holders.size);

  const iso = (ms: number) => new Date(ms).toISOString();

  function flushWrites(): void {
    clearTimeout(writeTimer);
    writeTimer = undefined;
    if (writes.size === 0) return;
    const batch = [...writes.values()];
    writes = new Map();
    try {
      api.apply(batch);
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

  function online(run: string, a: Omit<AgentOnline, 'proof'>): void {
    const info = { agentVersion: a.agent_version, forwardAllow: a.forward_allow };
    record(a.device_id, holders.online(a.device_id, { node: run, generation: a.generation, since: a.since, info }), a.since);
  }

  function offline(run: string, a: AgentOffline): void {
    record(a.device_id, holders.offline(a.device_id, { node: run, generation: a.generation }), a.at);
  }

  /** Agents of `run` that are not in `still` go offline, unless held elsewhere (a snapshot's end, or the run's end). */
  function dropAgentsOf(run: string, still?: ReadonlySet<string>): number {
    const outcomes = holders.dropNode(run, still);
    const at = deps.now();
    let gone = 0;
    for (const [deviceId, outcome] of outcomes) {
      record(deviceId, outcome, at);
      if (outcome.kind === 'offline') gone++;
    }
    return gone;
  }

  /**
   * The state of node `name` as of a message from its run `run`; undefined when the message must be
   * dropped (a run that is not the node's, or too many nodes). A new run replaces the old one,
   * whose agents go (those that did not come back elsewhere).
   */
  function nodeFor(name: string, run: string): NodeState | undefined {
    if (!isRunOf(name, run)) {
      refused.inc();
      log.warn('dropped a message from a node that named another node', { node: name, node_id: run.slice(0, 64) });
      return undefined;
    }
    let node = nodes.get(name);
    if (node?.run === run) return node;
    if (!node && nodes.size >= MAX_NODES) {
      refused.inc();
      log.warn('too many nodes; dropped a message from one more', { node: name, max: MAX_NODES });
      return undefined;
    }
    if (node) {
      const gone = dropAgentsOf(node.run);
      deps.onNodeGone(name);
      log.info('a node started again; its earlier run is gone', { node: name, node_id: run, offline: gone });
    }
    node = { run, url: undefined, lastHeard: mono(), agents: 0, mismatches: 0 };
    nodes.set(name, node);
    return node;
  }

  /** The agents of a report that come with the node's proof; the rest are dropped (and counted). */
  function proven(name: string, agents: readonly AgentOnline[]): AgentOnline[] {
    const ok = agents.filter((a) => {
      const key = deps.agentKey(a.device_id);
      return key !== undefined && proofMatches(nodeAgentProof(key, name, a.device_id), a.proof);
    });
    if (ok.length < agents.length) {
      refused.inc({}, agents.length - ok.length);
      log.warn('a node reported agents it could not prove it holds; ignoring them', { node: name, refused: agents.length - ok.length });
    }
    return ok;
  }

  function listen(): void {
    bus.onNode(CONTROL_VERBS.node, nodeHeartbeat, ({ node: name, body, reply }) => {
      const known = nodes.get(name)?.run === body.node_id;
      const node = nodeFor(name, body.node_id);
      if (!node) return;
      // A digest that differs on two heartbeats in a row is no report in flight: some were lost.
      const mismatches = body.digest !== undefined && body.digest !== holders.digest(node.run) ? node.mismatches + 1 : 0;
      const lost = mismatches >= 2;
      if (!known || node.url === undefined) log.info('a broker node joined', { node: name, node_id: body.node_id, url: body.url, agents: body.agents });
      const resync = node.url === undefined || lost;
      Object.assign(node, { url: body.url, lastHeard: mono(), agents: body.agents, mismatches: lost ? 0 : mismatches });
      if (lost) {
        resyncs.inc();
        log.warn('a node\'s presence differs from what it reported; asking it to resend', { node: name, agents: body.agents });
      }
      reply({ control_id: deps.run, resync });
    });
    bus.onNode(CONTROL_VERBS.presence, presenceMessage, ({ node: name, body }) => {
      const node = nodeFor(name, body.node_id);
      if (!node) return;
      node.lastHeard = mono();
      for (const a of proven(name, body.online)) online(node.run, a);
      if (body.kind === 'changes') {
        for (const a of body.offline) offline(node.run, a);
        return;
      }
      if (node.snapshot?.id !== body.snapshot_id) node.snapshot = { id: body.snapshot_id, devices: new Set() };
      const snap = node.snapshot;
      for (const a of body.online) if (holders.heldBy(a.device_id, node.run)) snap.devices.add(a.device_id);
      if (body.last) {
        node.snapshot = undefined;
        const dropped = dropAgentsOf(node.run, snap.devices);
        log.info('a node resent its presence', { node: name, agents: snap.devices.size, gone_meanwhile: dropped });
      }
    });
    bus.onNode(CONTROL_VERBS.seen, seenMessage, ({ node: name, body }) => {
      const run = nodes.get(name)?.run;
      if (run === undefined || body.node_id !== run) return;
      api.seen(new Map(body.seen.filter(([deviceId]) => holders.heldBy(deviceId, run))));
    });
  }

  function sweep(): void {
    if (!bus.up()) return; // silence is the bus's, not the nodes'
    const t = mono();
    for (const [name, n] of nodes) {
      if (t - n.lastHeard <= deadline) continue;
      nodes.delete(name);
      nodesLost.inc();
      const dropped = dropAgentsOf(n.run);
      deps.onNodeGone(name);
      log.warn('a broker node stopped answering; its agents that did not come back elsewhere are offline', { node: name, url: n.url, offline: dropped });
    }
    if (startupSweepAt !== undefined && t >= startupSweepAt) {
      startupSweepAt = undefined;
      let stale = 0;
      for (const deviceId of api.onlineIds()) {
        if (holders.holder(deviceId) || writes.get(deviceId)?.kind === 'online') continue;
        write({ kind: 'offline', deviceId, at: iso(deps.now()) });
        stale++;
      }
      if (stale > 0) log.info('agents online before this start did not come back within the deadline; offline now', { offline: stale });
    }
  }

  return {
    listen,
    sweep,
    holders,
    /** The public URL of the node `name` (from its heartbeats), when it is alive. */
    urlOf: (name: string): string | undefined => nodes.get(name)?.url,
    /** Whether node `name`'s current run holds the device's agent. */
    holds: (name: string, deviceId: string): boolean => {
      const run = nodes.get(name)?.run;
      return run !== undefined && holders.heldBy(deviceId, run);
    },
    /** The local broker's presence: held by this node, written like any other node's. */
    local: {
      online(deviceId: string, agentVersion: string | null, at: number, forwardAllow: readonly string[] | null, generation: number): void {
        online(deps.run, { device_id: deviceId, generation, since: at, agent_version: agentVersion, forward_allow: forwardAllow ? [...forwardAllow] : null });
      },
      offline(deviceId: string, at: number, generation: number): void {
        offline(deps.run, { device_id: deviceId, generation, at });
      },
      seen: (lastSeen: Map<string, number>) => api.seen(lastSeen),
    },
    /** The bus came up: nodes could not speak meanwhile; the first time, presence from before this start is checked after the deadline. */
    busUp(first: boolean): void {
      const t = mono();
      for (const n of nodes.values()) n.lastHeard = t;
      if (first) startupSweepAt = t + deadline;
    },
    flush: flushWrites,
  };
}
export type ControlPresence = ReturnType<typeof createControlPresence>;
