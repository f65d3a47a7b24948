/**
 * @module The control node's picture of where agents are (docs/cluster.md, presence): which node
 * holds each agent, by connection generation (a later connection wins, and an end counts only for
 * the connection it ends), written to the database in batches (./presence-writes); the nodes
 * alive, one run per node name (./control-nodes); and the sweep that lets go the agents of nodes
 * that stopped answering.
 *
 * A node speaks only for itself: what it reports is taken for the runs of its own name (the
 * subject says the name), an agent it reports online must come with the node's proof that it saw
 * the device's token, and it may report last-seen times only of agents it holds. So no node can
 * pin a device to itself, or make the control node keep agents that do not exist.
 */
import {
  CONTROL_VERBS,
  nameOfRun,
  nodeHeartbeat,
  presenceMessage,
  seenMessage,
  type AgentOffline,
  type AgentOnline,
  type PresenceMessage,
} from '../shared/protocol/cluster';
import { nodeAgentProof, proofMatches } from '../shared/auth/agent-proofs';
import type { Logger } from '../shared/log';
import type { Counter, Metrics } from '../shared/metrics';
import type * as z from 'zod/mini';
import type { Bus, Incoming } from './bus';
import { createNodeTable, type NodeTable } from './control-nodes';
import { deadlineOf } from './heartbeats';
import { HolderTable } from './holders';
import { createPresenceWrites, type AgentInfo, type PresenceApi, type PresenceWrites } from './presence-writes';

export type { PresenceApi, PresenceWrite } from './presence-writes';

export interface ControlPresenceDeps {
  bus: Bus;
  /** This control node's run id (its own relay's connections are held under it). */
  run: string;
  heartbeatMs: number;
  log: Logger;
  metrics: Metrics;
  now: () => number;
  api: PresenceApi;
  /** The SHA-256 of each device's agent token, the key of its proofs, by device id (one lookup per report); devices that do not exist are left out. */
  agentKeys(deviceIds: readonly string[]): Promise<ReadonlyMap<string, string>>;
  /** A node's run ended (it stopped answering, or started again): what it held elsewhere goes too. */
  onNodeGone(name: string): void;
}

interface ReportInboxDeps {
  log: Logger;
  refused: Counter;
  nodes: NodeTable;
  holders: HolderTable<AgentInfo>;
  agentKeys: ControlPresenceDeps['agentKeys'];
  online(run: string, a: AgentOnline): void;
  offline(run: string, a: AgentOffline): void;
  dropAgentsOf(run: string, still?: ReadonlySet<string>): number;
}

/**
 * The nodes' presence reports, taken one at a time in the order they came: each waits for the
 * keys of its proofs from the database, and a device's changes are taken in the order they happened.
 */
function createReportInbox(d: ReportInboxDeps) {
  const { log, refused, nodes, holders } = d;
  let inbox: Promise<void> = Promise.resolve();

  /** The agents of a report that come with the node's proof; the rest are dropped (and counted). */
  async function proven(name: string, agents: readonly AgentOnline[]): Promise<AgentOnline[]> {
    const keys = agents.length === 0 ? new Map<string, string>() : await d.agentKeys(agents.map((a) => a.device_id));
    const ok = agents.filter((a) => {
      const key = keys.get(a.device_id);
      return key !== undefined && proofMatches(nodeAgentProof(key, name, a.device_id), a.proof);
    });
    if (ok.length < agents.length) {
      refused.inc({}, agents.length - ok.length);
      log.warn('a node reported agents it could not prove it holds; ignoring them', { node: name, refused: agents.length - ok.length });
    }
    return ok;
  }

  async function take({ node: name, body }: Incoming<PresenceMessage>): Promise<void> {
    if (!nodes.nodeFor(name, body.node_id)) return;
    const ok = await proven(name, body.online);
    // Again: the run may have ended while the keys were read.
    const node = nodes.nodeFor(name, body.node_id);
    if (!node) return;
    node.lastHeard = performance.now();
    for (const a of ok) d.online(node.run, a);
    if (body.kind === 'changes') {
      for (const a of body.offline) d.offline(node.run, a);
      return;
    }
    if (node.snapshot?.id !== body.snapshot_id) node.snapshot = { id: body.snapshot_id, devices: new Set() };
    const snap = node.snapshot;
    for (const a of body.online) if (holders.heldBy(a.device_id, node.run)) snap.devices.add(a.device_id);
    if (body.last) {
      node.snapshot = undefined;
      const dropped = d.dropAgentsOf(node.run, snap.devices);
      log.info('a node resent its presence', { node: name, agents: snap.devices.size, gone_meanwhile: dropped });
    }
  }

  return {
    /** Takes a report once those before it are taken. */
    take(msg: Incoming<PresenceMessage>): void {
      inbox = inbox.then(() => take(msg)).catch((err: Error) => log.error('a presence report could not be taken', { node: msg.node, err: err.message }));
    },
    /** Runs `fn` once every report that came before is taken (what a node says next concerns what it reported). */
    after(fn: () => void): void {
      inbox = inbox.then(fn).catch((err: Error) => log.error('a cluster message could not be handled', { err: err.message }));
    },
    /** Resolves once every report that came is taken. */
    settled: (): Promise<void> => inbox,
  };
}

/**
 * Devices online before this start that no node holds go offline; false when they could not be
 * read (logged).
 */
async function offlineStale(api: PresenceApi, holders: HolderTable<AgentInfo>, writes: PresenceWrites, now: () => number, log: Logger): Promise<boolean> {
  let onlineIds: string[];
  try {
    onlineIds = await api.onlineIds();
  } catch (err) {
    log.error('could not read the agents online before this start; trying again', { err: (err as Error).message });
    return false;
  }
  let stale = 0;
  for (const deviceId of onlineIds) {
    if (holders.holder(deviceId) || writes.onlinePending(deviceId)) continue;
    writes.offline(deviceId, now());
    stale++;
  }
  if (stale > 0) log.info('agents online before this start did not come back within the deadline; offline now', { offline: stale });
  return true;
}

export function createControlPresence(deps: ControlPresenceDeps) {
  const { bus, log, api } = deps;
  const mono = () => performance.now();
  const deadline = deadlineOf(deps.heartbeatMs);
  const holders = new HolderTable<AgentInfo>();
  const writes = createPresenceWrites(api, log, deps.metrics);
  /** When presence left over from before this start is checked (once the edges had a deadline to resend theirs). */
  let startupSweepAt: number | undefined;

  const resyncs = deps.metrics.counter('tether_cluster_resyncs_total', 'Nodes asked to resend their presence because it differed from what they had reported.');
  const nodesLost = deps.metrics.counter('tether_cluster_nodes_lost_total', 'Nodes the control node declared gone (silent past the deadline).');
  const refused = deps.metrics.counter(
    'tether_cluster_refused_total',
    'Messages from nodes the control node refused: not about what the node holds, or without proof.',
  );
  const nodes = createNodeTable({
    log,
    refused,
    onRunReplaced(name, run, by) {
      const gone = dropAgentsOf(run);
      deps.onNodeGone(name);
      log.info('a node started again; its earlier run is gone', { node: name, node_id: by, offline: gone });
    },
  });
  deps.metrics.gauge('tether_cluster_nodes', 'Nodes of the cluster (control and edges), this one included.', () => nodes.size + 1);
  deps.metrics.gauge('tether_cluster_agents', 'Agents online across the cluster, as the control node knows them.', () => holders.size);

  function online(run: string, a: Omit<AgentOnline, 'proof'>): void {
    // The node's URL: a session's stream is joined there (websocket_url, docs/cluster.md).
    const info = { agentVersion: a.agent_version, forwardAllow: a.forward_allow, url: nodes.urlOf(nameOfRun(run)) };
    writes.record(a.device_id, holders.online(a.device_id, { node: run, generation: a.generation, since: a.since, info }), a.since);
  }

  function offline(run: string, a: AgentOffline): void {
    writes.record(a.device_id, holders.offline(a.device_id, { node: run, generation: a.generation }), a.at);
  }

  /** Agents of `run` that are not in `still` go offline, unless held elsewhere (a snapshot's end, or the run's end). */
  function dropAgentsOf(run: string, still?: ReadonlySet<string>): number {
    const at = deps.now();
    let gone = 0;
    for (const [deviceId, outcome] of holders.dropNode(run, still)) {
      writes.record(deviceId, outcome, at);
      if (outcome.kind === 'offline') gone++;
    }
    return gone;
  }

  const reports = createReportInbox({ log, refused, nodes, holders, agentKeys: deps.agentKeys, online, offline, dropAgentsOf });

  function listen(): void {
    bus.onNode(CONTROL_VERBS.node, nodeHeartbeat, ({ node: name, body, reply }) => reports.after(() => heartbeat(name, body, reply)));
    bus.onNode(CONTROL_VERBS.presence, presenceMessage, (msg) => reports.take(msg));
    bus.onNode(CONTROL_VERBS.seen, seenMessage, ({ node: name, body }) =>
      reports.after(() => {
        const run = nodes.runOf(name);
        if (run === undefined || body.node_id !== run) return;
        void seen(new Map(body.seen.filter(([deviceId]) => holders.heldBy(deviceId, run))));
      }),
    );
  }

  /** A node's heartbeat, taken after its reports before it: its digest is compared with what they made of its agents. */
  function heartbeat(name: string, body: z.infer<typeof nodeHeartbeat>, reply: (answer: unknown) => void): void {
    const known = nodes.runOf(name) === body.node_id;
    const node = nodes.nodeFor(name, body.node_id);
    if (!node) return;
    // A digest that differs on two heartbeats in a row is no report in flight: some were lost.
    const mismatches = body.digest !== undefined && body.digest !== holders.digest(node.run) ? node.mismatches + 1 : 0;
    const lost = mismatches >= 2;
    if (!known || node.url === undefined) log.info('a node joined', { node: name, node_id: body.node_id, url: body.url, agents: body.agents });
    const resync = node.url === undefined || lost;
    Object.assign(node, { url: body.url, lastHeard: mono(), agents: body.agents, mismatches: lost ? 0 : mismatches });
    if (lost) {
      resyncs.inc();
      log.warn("a node's presence differs from what it reported; asking it to resend", { node: name, agents: body.agents });
    }
    reply({ control_id: deps.run, resync });
  }

  /** Records heartbeats (last-seen times); a failure is logged: the next ones come soon. */
  const seen = (lastSeen: Map<string, number>): Promise<void> =>
    api.seen(lastSeen).catch((err: Error) => log.error('could not record agent heartbeats', { err: err.message, devices: lastSeen.size }));

  function sweep(): void {
    if (!bus.up()) return; // silence is the bus's, not the nodes'
    for (const [name, n] of nodes.takeSilent(deadline)) {
      nodesLost.inc();
      const dropped = dropAgentsOf(n.run);
      deps.onNodeGone(name);
      log.warn('a node stopped answering; its agents that did not come back elsewhere are offline', { node: name, url: n.url, offline: dropped });
    }
    if (startupSweepAt !== undefined && mono() >= startupSweepAt) {
      startupSweepAt = undefined;
      void offlineStale(api, holders, writes, deps.now, log).then((done) => {
        if (!done) startupSweepAt = mono(); // the next sweep tries again
      });
    }
  }

  return {
    listen,
    sweep,
    holders,
    urlOf: nodes.urlOf,
    /** Whether node `name`'s current run holds the device's agent. */
    holds: (name: string, deviceId: string): boolean => {
      const run = nodes.runOf(name);
      return run !== undefined && holders.heldBy(deviceId, run);
    },
    /** The local relay's presence: held by this node, written like any other node's. */
    local: {
      online(deviceId: string, agentVersion: string | null, at: number, forwardAllow: readonly string[] | null, generation: number): void {
        online(deps.run, { device_id: deviceId, generation, since: at, agent_version: agentVersion, forward_allow: forwardAllow ? [...forwardAllow] : null });
      },
      offline(deviceId: string, at: number, generation: number): void {
        offline(deps.run, { device_id: deviceId, generation, at });
      },
      seen,
    },
    /** The bus came up: nodes could not speak meanwhile; the first time, presence from before this start is checked after the deadline. */
    busUp(first: boolean): void {
      nodes.heardAll();
      if (first) startupSweepAt = mono() + deadline;
    },
    /** Takes the presence reports that came, and writes what waits; resolves once every write so far is done. */
    async flush(): Promise<void> {
      await reports.settled();
      await writes.flush();
    },
  };
}
export type ControlPresence = ReturnType<typeof createControlPresence>;
