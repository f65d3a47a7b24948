/**
 * @module What an edge tells the control node about what it holds (docs/cluster.md, presence):
 * its agents as changes with connection generations, batched, and, whenever the control node may
 * have missed some (it restarted, the bus was away, a batch was lost), as a full snapshot; and
 * the clients of session streams here, for the control node's idle sessions.
 */
import { CONTROL_VERBS, PART, type AgentOffline, type AgentOnline, type ControlVerb } from '../shared/protocol/cluster';
import { randomBase32 } from '../shared/ids';
import type { Logger } from '../shared/log';
import type { Metrics } from '../shared/metrics';
import type { Bus } from './bus';
import type { LocalRelay } from './local-relay';

const PRESENCE_FLUSH_MS = 50;

export interface EdgePresenceDeps {
  bus: Bus;
  /** This run's id: the name and 8 random characters. */
  nodeId: string;
  subject(verb: ControlVerb): string;
  log: Logger;
  metrics: Metrics;
  /** The relay whose agents a snapshot lists, once it runs. */
  localRelay(): LocalRelay | undefined;
  /** The node's proof for a device, sent with its presence. */
  proofOf(deviceId: string): string;
}

export function createEdgePresence(deps: EdgePresenceDeps) {
  const { bus, nodeId, subject, log } = deps;
  let pendingOnline: AgentOnline[] = [];
  let pendingOffline: AgentOffline[] = [];
  let presenceTimer: NodeJS.Timeout | undefined;
  /** The control node may have missed changes: the next heartbeat answer sends a snapshot. */
  let needSnapshot = true;
  const clientsHere = new Set<string>();
  let clientChanges = new Map<string, boolean>();
  let clientsTimer: NodeJS.Timeout | undefined;
  const snapshotsSent = deps.metrics.counter('tether_cluster_snapshots_total', 'Presence snapshots this node sent to the control node.');

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

  function flush(): void {
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

  const queue = () => void (presenceTimer ??= setTimeout(flush, PRESENCE_FLUSH_MS));

  const online = (a: {
    deviceId: string;
    generation: number;
    since: number;
    agentVersion: string | null;
    forwardAllow: readonly string[] | null;
  }): AgentOnline => ({
    device_id: a.deviceId,
    generation: a.generation,
    since: a.since,
    agent_version: a.agentVersion,
    forward_allow: a.forwardAllow ? [...a.forwardAllow] : null,
    proof: deps.proofOf(a.deviceId),
  });

  function sendSnapshot(): void {
    const localRelay = deps.localRelay();
    if (!localRelay) return;
    needSnapshot = false;
    flush();
    const all = [...localRelay.agents()].map(online);
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

  let leaving = false;

  return {
    /** The node is stopping: the ends of its agents' connections are not reported. */
    leaving(): void {
      leaving = true;
    },
    /** Where the relay reports its agents (its PresenceSink). */
    sink: {
      online(deviceId: string, agentVersion: string | null, at: number, forwardAllow: readonly string[] | null, generation: number): void {
        pendingOnline.push(online({ deviceId, generation, since: at, agentVersion, forwardAllow }));
        queue();
      },
      offline(deviceId: string, at: number, generation: number): void {
        // A node that is stopping lets its agents go to other nodes: whether they got there is
        // the control node's to see (it gives the node's agents the deadline, as for a node lost).
        if (leaving) return;
        pendingOffline.push({ device_id: deviceId, generation, at });
        queue();
      },
      seen(lastSeen: Map<string, number>): void {
        const all = [...lastSeen];
        for (let i = 0; i < all.length; i += PART) bus.publish(subject(CONTROL_VERBS.seen), { node_id: nodeId, seen: all.slice(i, i + PART) });
      },
    },
    /** Clients joined or left session streams here (batched like presence). */
    streamClients: {
      attached: (sessionId: string) => queueClients(sessionId, true),
      detached: (sessionId: string) => queueClients(sessionId, false),
    },
    /** Sends the changes waiting (before a heartbeat whose digest covers them). */
    flush,
    /** The control node may have missed changes: send a snapshot at the next chance. */
    missed(): void {
      needSnapshot = true;
    },
    get needSnapshot(): boolean {
      return needSnapshot;
    },
    sendSnapshot,
    /** Sends what waits, presence and clients. */
    close(): void {
      flush();
      flushClients();
    },
  };
}
