/**
 * @module An edge node's side of the cluster (docs/cluster.md): what its relay needs from a
 * database it does not have, asked of the control node over NATS (./edge-credentials), what it
 * reports of the agents and clients it holds (./edge-presence) and of the bytes it relays
 * (./edge-bytes), and its heartbeat, whose answer says when the control node needs the whole
 * picture again. An edge cut from the bus past the agents' heartbeat deadline lets its agents go,
 * so that they reconnect to a node that can vouch for them.
 */
import { CONTROL_VERBS, controlSubject, nodeHeartbeatReply, sentReply, type BroadcastMessage, type ControlVerb } from '../shared/protocol/cluster';
import type { RelayToAgentMessage } from '../shared/protocol/control-channel';
import type { Logger } from '../shared/log';
import type { Metrics } from '../shared/metrics';
import type { Bus } from './bus';
import { createEdgeBytes } from './edge-bytes';
import { createEdgeCredentials } from './edge-credentials';
import { createEdgePresence } from './edge-presence';
import { deadlineOf, nodeHeartbeatOf } from './heartbeats';
import { digestOf } from './holders';
import type { LocalRelay } from './local-relay';
import { followCluster } from './node';
import { publishedRecordings } from './recording-link';

export { AGENT_AUTH_CACHE_MS, STREAM_AUTH_CACHE_MS } from './edge-credentials';

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

type StreamOpen = Extract<RelayToAgentMessage, { type: 'stream.open' }>;

export function createEdge(deps: EdgeDeps) {
  const { bus, nodeId, nodeName, log } = deps;
  const subject = (verb: ControlVerb) => controlSubject(nodeName, verb);
  const mono = () => performance.now();
  const deadline = deadlineOf(deps.heartbeatMs);
  let localRelay: LocalRelay | undefined;
  let controlId: string | undefined;
  let downSince: number | undefined = mono();
  let agentsReleased = false;
  let closed = false;
  const timers: NodeJS.Timeout[] = [];

  const credentials = createEdgeCredentials({ bus, nodeName, subject });
  const presence = createEdgePresence({ bus, nodeId, subject, log, metrics: deps.metrics, localRelay: () => localRelay, proofOf: credentials.proofOf });
  const bytes = createEdgeBytes(bus, subject);

  async function heartbeat(): Promise<void> {
    if (!bus.up() || !localRelay) return;
    // Changes go out first: the control node has them before the heartbeat whose digest covers them.
    presence.flush();
    try {
      const reply = await bus.request(
        subject(CONTROL_VERBS.node),
        { node_id: nodeId, url: deps.publicUrl, agents: localRelay.agentCount(), digest: digestOf(localRelay.agents()) },
        nodeHeartbeatReply,
      );
      if (reply.control_id !== controlId) {
        if (controlId !== undefined) log.info('the control node changed; resending presence', { control_id: reply.control_id });
        controlId = reply.control_id;
        presence.missed();
      }
      if (reply.resync || presence.needSnapshot) presence.sendSnapshot();
    } catch (err) {
      // Nobody answered: whatever changes are published now may be lost.
      log.debug('the control node did not answer a heartbeat', { err: (err as Error).message });
      presence.missed();
    }
  }

  /** Past the deadline without the bus, agents go where they can be vouched for. */
  function checkCut(): void {
    if (downSince === undefined || agentsReleased || !localRelay || controlId === undefined) return;
    if (mono() - downSince < deadline) return;
    agentsReleased = true;
    log.warn('cut from the cluster bus past the heartbeat deadline; letting the agents go to other nodes', { down_ms: Math.round(mono() - downSince) });
    localRelay.disconnectAgents(1001, 'this node lost its cluster; reconnect to another');
  }

  /** A broadcast changed what the edge keeps (or the control node asks for everything again). */
  function onBroadcast(msg: BroadcastMessage): void {
    credentials.forget(msg);
    if (msg.type !== 'resync') return;
    presence.missed();
    void heartbeat();
  }

  const relayDeps = {
    authenticateAgent: credentials.authenticateAgent,
    authorizeStream: credentials.authorizeStream,
    presence: presence.sink,
    recordBytes: bytes.record,
    recordings: publishedRecordings(bus, nodeName, log),

    /** The agent is on another node: the control node sends it `stream.open` (signed) through its node, to dial here. */
    async routeStream(_deviceId: string, msg: StreamOpen): Promise<boolean> {
      const request = { session_id: msg.session_id, stream_id: msg.stream_id, ...(msg.mode && { mode: msg.mode }) };
      const reply = await bus.request(subject(CONTROL_VERBS.streamOpen), request, sentReply);
      return reply.sent;
    },

    onStreamRefusedElsewhere(deviceId: string, streamId: string, message: string): void {
      bus.publish(subject(CONTROL_VERBS.streamRefused), { device_id: deviceId, stream_id: streamId, message: message.slice(0, 200) });
    },

    streamClients: presence.streamClients,
  };

  return {
    relayDeps,

    /** Whether the bus is up (the health check says so). */
    up: () => bus.up(),

    /** The bus came up: the control node hears of every agent here again. */
    busUp(): void {
      downSince = undefined;
      agentsReleased = false;
      presence.missed();
      void heartbeat();
    },

    busDown(): void {
      downSince ??= mono();
    },

    /** Starts following the cluster with this relay. */
    start(relay: LocalRelay): void {
      localRelay = relay;
      followCluster({ bus, nodeName, localRelay: relay, log, onBroadcast });
      const beat = nodeHeartbeatOf(deps.heartbeatMs);
      timers.push(
        setInterval(() => {
          void heartbeat();
          checkCut();
        }, beat),
        setInterval(() => void bytes.flush(), BYTES_FLUSH_MS),
        setInterval(() => credentials.prune(new Set([...relay.agents()].map((a) => a.deviceId))), 10_000),
      );
      bus.start();
    },

    /** Stops the timers, sends the last counts and presence, and closes the bus. */
    /**
     * The node is about to stop and close its agents' connections: they move to other nodes, and
     * the control node gives them the deadline, so a device whose agent moves is never offline.
     */
    leaving(): void {
      presence.leaving();
    },

    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      for (const t of timers) clearInterval(t);
      presence.close();
      await bytes.flush();
      await bus.close();
    },
  };
}
export type Edge = ReturnType<typeof createEdge>;
