/**
 * @module The control node's side of the cluster (docs/cluster.md): `tether server` with
 * `TETHER_NATS_URL`. It answers the nodes from the API (proofs of agents, stream credentials),
 * keeps which node holds each agent (./control-presence), sends `stream.open` only for streams it
 * granted (./control-streams), takes recordings of shells spliced on other nodes, and broadcasts
 * what every node must act on. Each node is known by the name its subjects carry, which the bus's
 * permissions prove; nothing a node says about another node is taken.
 */
import { BROADCAST_SUBJECT, type BroadcastMessage } from '../shared/protocol/cluster';
import type { RelayToAgentMessage } from '../shared/protocol/control-channel';
import type { Logger } from '../shared/log';
import type { Metrics } from '../shared/metrics';
import type { StreamRecorder } from '../shared/relay/recording';
import type { Bus } from './bus';
import { createControlPresence, type PresenceApi } from './control-presence';
import { createControlStreams, type StreamsApi } from './control-streams';
import { broadcastingRelay } from './broadcasts';
import { nodeHeartbeatOf } from './heartbeats';
import type { LocalRelay } from './local-relay';
import { receiveRecordings } from './recording-link';

export type { PresenceWrite } from './control-presence';

/** What the control node needs from the API. */
export interface ControlApi extends StreamsApi {
  presence: PresenceApi;
  /** The SHA-256 of each device's agent token (`agentKey`), for many devices at once; devices that do not exist are left out. */
  agentKeys(deviceIds: readonly string[]): Promise<ReadonlyMap<string, string>>;
  recordings: StreamRecorder;
}

export interface ControlDeps {
  bus: Bus;
  /** This run's id (`control-` and 8 random characters). */
  run: string;
  publicUrl: string;
  heartbeatMs: number;
  log: Logger;
  metrics: Metrics;
  now: () => number;
  api: ControlApi;
}

/** Broadcasts made while the bus is away wait for it, up to this many. */
const MAX_HELD_BROADCASTS = 10_000;

type StreamOpen = Extract<RelayToAgentMessage, { type: 'stream.open' }>;

export function createControl(deps: ControlDeps) {
  const { bus, log, api } = deps;
  let localRelay: LocalRelay | undefined;
  let heldBroadcasts: BroadcastMessage[] = [];
  let everUp = false;
  const timers: NodeJS.Timeout[] = [];
  let recordings: ReturnType<typeof receiveRecordings> | undefined;

  const presence = createControlPresence({
    bus,
    run: deps.run,
    heartbeatMs: deps.heartbeatMs,
    log,
    metrics: deps.metrics,
    now: deps.now,
    api: api.presence,
    agentKeys: (deviceIds) => api.agentKeys(deviceIds),
    onNodeGone(name) {
      recordings?.nodeGone(name);
      streams.nodeGone(name);
    },
  });
  const streams = createControlStreams({
    bus,
    run: deps.run,
    publicUrl: deps.publicUrl,
    log,
    api,
    presence,
    localRelay: () => localRelay,
    broadcastRefused: (deviceId, streamId, message) => broadcast({ type: 'stream.refused', device_id: deviceId, stream_id: streamId, message }),
  });
  deps.metrics.gauge('tether_cluster_bus_up', '1 while this node is connected to NATS.', () => (bus.up() ? 1 : 0));

  function broadcast(msg: BroadcastMessage): void {
    if (bus.publish(BROADCAST_SUBJECT, msg)) return;
    if (heldBroadcasts.length < MAX_HELD_BROADCASTS) heldBroadcasts.push(msg);
    else log.error('the cluster bus is away and too much waits for it; a broadcast is lost', { type: msg.type });
  }

  return {
    /** The local relay's presence: held by this node, written like any other node's. */
    presence: presence.local,

    /** For the local relay: a device held elsewhere gets `stream.open` through its node, to dial here. */
    routeStream: (deviceId: string, msg: StreamOpen) => streams.routeLocal(deviceId, msg),

    onStreamRefusedElsewhere(deviceId: string, streamId: string, message: string): void {
      broadcast({ type: 'stream.refused', device_id: deviceId, stream_id: streamId, message });
    },

    /** What the API tells the relay (shared/relay/events.ts), for every node; sessions can be opened only while the bus is up. */
    relay: broadcastingRelay({
      localRelay: () => localRelay,
      broadcast,
      available: () => bus.up(),
      sessionClosed: (sessionId) => streams.sessionClosed(sessionId),
    }),

    /** The bus came up (first time, or back after an outage): every node resends its presence. */
    busUp(): void {
      presence.busUp(!everUp);
      everUp = true;
      const held = heldBroadcasts;
      heldBroadcasts = [];
      for (const msg of held) broadcast(msg);
      broadcast({ type: 'resync', control_id: deps.run });
    },

    busDown(): void {},

    start(relay: LocalRelay): void {
      localRelay = relay;
      presence.listen();
      streams.listen();
      recordings = receiveRecordings(bus, api.recordings, log, (name, sessionId) => streams.recordable(name, sessionId));
      timers.push(setInterval(presence.sweep, nodeHeartbeatOf(deps.heartbeatMs)));
      bus.start();
    },

    async close(): Promise<void> {
      for (const t of timers) clearInterval(t);
      await presence.flush();
      recordings?.close();
      await bus.close();
    },
  };
}
export type Control = ReturnType<typeof createControl>;
