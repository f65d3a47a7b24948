/**
 * @module The relay: the agent control channel (and, with it, presence), the session
 * streams it splices to devices, and the routing of WebSocket upgrades. It knows nothing of the
 * database: the composition root passes in how to authenticate agents and clients, where
 * presence goes and where byte counts are recorded.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from '../shared/log';
import type { Metrics } from '../shared/metrics';
import { AGENT_CLOSE, AGENT_CONNECT_PATH, AGENT_STREAM_PATH, agentCloseReason, type RelayToAgentMessage } from '../shared/protocol/control-channel';
import { STREAM_PATH, type StreamAccess } from '../shared/protocol/session-stream';
import type { StreamRecorder } from '../shared/relay/recording';
import { closeReasonOf, type ClosedSession, type ExtendedSession, type OpenedSession, type Relay } from '../shared/relay/events';
import { DEFAULT_SESSION_WARNINGS_S } from '../shared/relay/expiry-warnings';
import { createAgentChannel, type PresenceSink } from './agents';
import { guardRawSocket } from './accept';
import { rejectUpgrade } from './reject';
import type { ByteCounts } from './byte-meter';
import { createStreams, type StreamDeps } from './streams';
import type { AgentAuthenticator } from './credentials';
import type { AgentEntry } from './registry';
import type { JobResultMessage, JobsRunningMessage } from '../shared/protocol/jobs';

export const DEFAULT_HEARTBEAT_MS = 20_000;
export type { ByteCounts } from './byte-meter';

export interface RelayDeps {
  log: Logger;
  metrics: Metrics;
  now: () => number;
  heartbeatMs: number;
  /** May answer later (an edge node asks the control node) and reject when it cannot (503 to the peer). */
  authenticateAgent: AgentAuthenticator;
  presence: PresenceSink;
  authorizeStream(sessionId: string, credentials: { ticket?: string; bearer?: string }): StreamAccess | Promise<StreamAccess>;
  recordBytes(counts: Map<string, ByteCounts>): void | Promise<void>;
  /** How long a client waits for the device to join (10 s, docs/session-streams.md; tests shorten it). */
  joinTimeoutMs?: number;
  /** Records streams as they pass (shell sessions); none: nothing is recorded. */
  recordings?: StreamRecorder | undefined;
  /** Browser origins besides the server's own that may open session streams. */
  allowedOrigins?: readonly string[] | undefined;
  /** The URL this node is reached at (TETHER_PUBLIC_URL, or derived from the listening address): its origin may open session streams. */
  publicUrl?: string | undefined;
  /** In a cluster: asks the node that holds a device's agent to send it `stream.open` (docs/cluster.md). */
  routeStream?: StreamDeps['routeStream'];
  /** In a cluster: an agent here refused a stream that waits on no stream here (its client is on another node). */
  onStreamRefusedElsewhere?(deviceId: string, streamId: string, message: string): void;
  /** Seconds before a session's end at which its stream's client gets a notice (TETHER_SESSION_WARNINGS; default 300 and 60). */
  warningsS?: readonly number[] | undefined;
  /** Told when clients join and leave session streams here: the API closes sessions nobody uses (`idle`). */
  streamClients?: { attached(sessionId: string): void; detached(sessionId: string): void } | undefined;
  /**
   * Told the job messages of the agents connected here (shared/protocol/jobs.ts) and when each
   * agent connection closes, both with the connection's generation; none: job messages are dropped.
   */
  jobs?: RelayJobSink | undefined;
}

/** Where the relay hands agents' job messages; it keeps no job state itself. */
export interface RelayJobSink {
  message(deviceId: string, generation: number, msg: JobsRunningMessage | JobResultMessage): void;
  gone(deviceId: string, generation: number): void;
}

export function createRelay(deps: RelayDeps) {
  const log = deps.log;
  const tunnelBytes = deps.metrics.counter('tether_tunnel_bytes_total', 'Payload bytes relayed through tunnels, by direction.');
  // Resolved once (every relayed frame bumps one), and present from the first scrape.
  const bytesTo = tunnelBytes.series({ direction: 'to_device' });
  const bytesFrom = tunnelBytes.series({ direction: 'from_device' });

  const agents = createAgentChannel({
    log: log.child({ component: 'agents' }),
    now: deps.now,
    heartbeatMs: deps.heartbeatMs,
    authenticateAgent: deps.authenticateAgent,
    presence: deps.presence,
    onStreamRefused(deviceId, streamId, message) {
      if (!streams.refused(deviceId, streamId, message)) deps.onStreamRefusedElsewhere?.(deviceId, streamId, message);
    },
    onJobMessage: (deviceId, generation, msg) => deps.jobs?.message(deviceId, generation, msg),
    onAgentGone: (deviceId, generation) => deps.jobs?.gone(deviceId, generation),
  });
  const streams = createStreams({
    log: log.child({ component: 'streams' }),
    authorize: deps.authorizeStream,
    authenticateAgent: deps.authenticateAgent,
    sendToAgent: (deviceId, msg) => agents.sendTo(deviceId, msg),
    routeStream: deps.routeStream,
    recordBytes: deps.recordBytes,
    onBytes: (direction, bytes) => (direction === 'to_device' ? bytesTo : bytesFrom).inc(bytes),
    joinTimeoutMs: deps.joinTimeoutMs,
    now: deps.now,
    recordings: deps.recordings,
    allowedOrigins: deps.allowedOrigins,
    publicUrl: deps.publicUrl,
    streamClients: deps.streamClients,
    warningsS: deps.warningsS ?? DEFAULT_SESSION_WARNINGS_S,
  });
  deps.metrics.gauge('tether_agents_online', 'Agents connected to this node.', () => agents.registry.size);
  deps.metrics.gauge('tether_streams_open', 'Session streams with a client connected.', () => streams.size);

  /** The relay's events (shared/relay/events.ts), acted on for the agents and streams here. */
  const relay: Relay = {
    sessionOpened(s: OpenedSession): void {
      agents.sendTo(s.device_id, { type: 'session.opened', session_id: s.session_id, protocol: s.protocol, expires_at: s.expires_at });
    },
    /**
     * The session's end moved: its agent learns the new expiry (a `session.opened` again, which
     * re-arms the agent's own timer and leaves its streams be), its stream's client is warned anew.
     */
    sessionExtended(s: ExtendedSession): void {
      agents.sendTo(s.device_id, { type: 'session.opened', session_id: s.session_id, protocol: s.protocol, expires_at: s.expires_at });
      streams.extended(s.session_id, s.expires_at);
    },
    /** Ends the session's stream and tells the device to end its handler; resolves once its counts are written. */
    sessionClosed(s: ClosedSession): Promise<void> {
      const reason = closeReasonOf(s);
      streams.endSession(s.session_id, reason);
      agents.sendTo(s.device_id, { type: 'session.close', session_id: s.session_id, reason: agentCloseReason(reason) });
      return streams.countsWritten();
    },
    deviceDeleted(deviceId: string): void {
      agents.disconnect(deviceId, AGENT_CLOSE.deviceDeleted, 'device deleted');
    },
    /** The agent still on the old token answers 401 from now on. */
    agentTokenRotated(deviceId: string): void {
      agents.disconnect(deviceId, AGENT_CLOSE.tokenRotated, 'agent token rotated');
    },
    tokenRevoked(tokenId: string): void {
      streams.endToken(tokenId);
    },
  };

  return {
    ...relay,

    /** Takes an HTTP upgrade request; anything that is not a relay path gets 404. */
    handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
      guardRawSocket(socket, log);
      const path = (req.url ?? '').split('?')[0]!;
      const stream = STREAM_PATH.exec(path);
      const sessionId = stream ? decodedSegment(stream[1]!) : undefined;
      let handled: Promise<void>;
      if (path === AGENT_CONNECT_PATH) handled = agents.handleUpgrade(req, socket, head);
      else if (path === AGENT_STREAM_PATH) handled = streams.handleAgentUpgrade(req, socket, head);
      else if (sessionId !== undefined) handled = streams.handleClientUpgrade(req, socket, head, sessionId);
      else return rejectUpgrade(socket, 404, 'not_found', 'no WebSocket endpoint at this path');
      handled.catch((err: Error) => {
        log.error('an upgrade failed', { path, err: err.message });
        socket.destroy();
      });
    },

    /** Sends a control message to a device's agent if it is connected here; false if it is not. */
    sendToAgent: (deviceId: string, msg: RelayToAgentMessage): boolean => agents.sendTo(deviceId, msg),

    /** Sends a job message to a device's agent connection `generation` if it is still that one here; false if not. */
    sendJobMessage: (deviceId: string, generation: number, msg: RelayToAgentMessage): boolean => agents.sendTo(deviceId, msg, generation),

    /** An agent (maybe on another node) refused the stream `streamId`; false when it does not wait here. */
    streamRefused: (deviceId: string, streamId: string, message: string): boolean => streams.refused(deviceId, streamId, message),

    /** The agents connected here. */
    agents: (): IterableIterator<AgentEntry<unknown>> => agents.registry.entries(),
    agentCount: (): number => agents.registry.size,

    /** Disconnects every agent (a node cut from its cluster lets them move to another node). */
    disconnectAgents: (code: number, reason: string): void => agents.disconnectAll(code, reason),

    /** Closes every stream and agent connection (1001) and stops the timers. */
    async close(): Promise<void> {
      await streams.close();
      await agents.close();
    },
  };
}
export type RelayServer = ReturnType<typeof createRelay>;

/** A percent-decoded path segment; undefined when its encoding is broken (`%zz`, bad UTF-8). */
function decodedSegment(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}
