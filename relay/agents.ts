/**
 * @module The agent control channel: authenticates agents at the upgrade, tracks presence with
 * generations, checks liveness with pings (./agent-heartbeats), and carries control messages to
 * agents. An agent that lets our writes pile up unread (messages or pongs) is dropped, so none can
 * make us queue without bound.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocket, WebSocketServer } from 'ws';
import type { Logger } from '../shared/log';
import type { JobResultMessage, JobsRunningMessage } from '../shared/protocol/jobs';
import { AGENT_CLOSE, AGENT_HEADERS, agentToRelayMessage, type RelayToAgentMessage } from '../shared/protocol/control-channel';
import { parseTextFrame } from '../shared/protocol/text-frame';
import { AGENT_SUBPROTOCOL, TETHER_VERSION } from '../shared/version';
import { formatTarget, MAX_PATTERNS, parsePattern } from '../shared/protocol/port-forward/targets';
import { createAgentHeartbeats } from './agent-heartbeats';
import { createPresenceReports } from './presence-reports';
import { AgentRegistry, type AgentEntry } from './registry';
import { acceptWebSocket } from './accept';
import { checkedAgent, type AgentAuthenticator } from './credentials';
import { rejectUpgrade } from './reject';

/** Control messages are small; anything bigger is garbage or abuse. */
const CONTROL_MAX_PAYLOAD = 64 * 1024;
/** An agent that lets this much control traffic pile up unread is dropped. */
const CONTROL_MAX_BUFFERED = 1024 * 1024;

/**
 * Where the relay reports its agents. A report may be written later (a promise): a device's
 * reports are made one after another, each once the one before it is done, and a failed one is
 * logged.
 */
export interface PresenceSink {
  /**
   * `forwardAllow`: the port-forward patterns the agent announced; null when it announced none.
   * `generation` names the connection (the registry's); its end reports the same one.
   */
  online(deviceId: string, agentVersion: string | null, at: number, forwardAllow: readonly string[] | null, generation: number): void | Promise<void>;
  offline(deviceId: string, at: number, generation: number): void | Promise<void>;
  /** Heartbeats since the last call, by device (for `last_seen_at`). */
  seen(lastSeen: Map<string, number>): void | Promise<void>;
}

export interface AgentChannelDeps {
  log: Logger;
  /** Wall clock (ms), for `last_seen_at`; liveness uses the monotonic clock, immune to clock steps. */
  now: () => number;
  heartbeatMs: number;
  /** True when the credential proves `deviceId`; rejects when that cannot be known now. */
  authenticateAgent: AgentAuthenticator;
  presence: PresenceSink;
  /** An agent acknowledged that a session's handler ended. */
  onSessionEnded?(deviceId: string, sessionId: string): void;
  /** An agent will not serve a stream it was asked to. */
  onStreamRefused?(deviceId: string, streamId: string, message: string): void;
  /** A job message of an agent connected here (shared/protocol/jobs.ts), with its connection's generation. */
  onJobMessage?(deviceId: string, generation: number, msg: JobsRunningMessage | JobResultMessage): void;
  /** The agent connection `generation` of a device closed (also one a newer connection replaced). */
  onAgentGone?(deviceId: string, generation: number): void;
}

/**
 * The allow-list an agent announced (canonical `HOST:PORT` patterns); null when it sent none (an
 * agent that does not forward ports). Patterns that do not parse are dropped and reported: the
 * agent forwards to none of them.
 */
function announcedAllowList(header: string | string[] | undefined, onProblem: (problem: string) => void): string[] | null {
  if (typeof header !== 'string') return null;
  const patterns: string[] = [];
  for (const item of header.split(',').slice(0, MAX_PATTERNS)) {
    if (item.trim() === '') continue;
    const parsed = parsePattern(item.trim());
    if (parsed.ok) patterns.push(formatTarget(parsed.value));
    else onProblem(parsed.problem);
  }
  return patterns;
}

export function createAgentChannel(deps: AgentChannelDeps) {
  const { log, now, heartbeatMs, presence } = deps;
  const registry = new AgentRegistry<WebSocket>();
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: CONTROL_MAX_PAYLOAD,
    perMessageDeflate: false,
    // We answer pings ourselves, within the bound every write to an agent keeps (`behind`).
    autoPong: false,
    handleProtocols: (offered) => (offered.has(AGENT_SUBPROTOCOL) ? AGENT_SUBPROTOCOL : false),
  });
  const mono = () => performance.now();
  const reports = createPresenceReports(log);
  const heartbeats = createAgentHeartbeats({ registry, heartbeatMs, now, log, seen: (lastSeen) => reports.seen(() => presence.seen(lastSeen)) });

  function onConnection(ws: WebSocket, deviceId: string, agentVersion: string | null, forwardAllow: string[] | null): void {
    const since = now();
    const { entry, replaced } = registry.attach(deviceId, ws, agentVersion, mono(), { since, forwardAllow });
    const alog = log.child({ device_id: deviceId, generation: entry.generation });
    alog.info('agent connected', { agent_version: agentVersion, forward_allow: forwardAllow });
    reports.of(deviceId, () => presence.online(deviceId, agentVersion, since, forwardAllow, entry.generation));
    if (replaced) {
      alog.info('agent connection replaced an older one', { replaced_generation: replaced.generation });
      replaced.socket.close(AGENT_CLOSE.replaced, 'replaced by a newer connection');
    }

    ws.on('pong', () => heartbeats.seen(entry));
    ws.on('ping', function onAgentPing(data) {
      if (ws.readyState === WebSocket.OPEN && !behind(entry)) ws.pong(data);
    });
    ws.on('message', function onAgentMessage(data, isBinary) {
      heartbeats.seen(entry);
      const msg = isBinary ? undefined : parseTextFrame(agentToRelayMessage, data.toString());
      if (!msg) {
        alog.warn('agent sent an invalid control message; closing');
        ws.close(AGENT_CLOSE.protocolError, 'invalid control message');
        return;
      }
      if (msg.type === 'session.ended') deps.onSessionEnded?.(deviceId, msg.session_id);
      else if (msg.type === 'stream.refused') deps.onStreamRefused?.(deviceId, msg.stream_id, msg.message.slice(0, 100));
      else deps.onJobMessage?.(deviceId, entry.generation, msg);
    });
    ws.on('close', function onAgentClose(code) {
      heartbeats.forget(deviceId);
      deps.onAgentGone?.(deviceId, entry.generation);
      if (registry.detach(entry)) {
        const at = now();
        reports.of(deviceId, () => presence.offline(deviceId, at, entry.generation));
        alog.info('agent disconnected', { code });
      }
    });
    send(entry, {
      type: 'welcome',
      device_id: deviceId,
      heartbeat_ms: heartbeatMs,
      server_version: TETHER_VERSION,
    });
  }

  /** Drops an agent that left more than CONTROL_MAX_BUFFERED bytes of ours unread; true if it did. */
  function behind(entry: AgentEntry<WebSocket>): boolean {
    if (entry.socket.bufferedAmount <= CONTROL_MAX_BUFFERED) return false;
    log.warn('agent is not reading its control channel; dropping it', { device_id: entry.deviceId });
    entry.socket.terminate();
    return true;
  }

  function send(entry: AgentEntry<WebSocket>, msg: RelayToAgentMessage): boolean {
    if (entry.socket.readyState !== WebSocket.OPEN || behind(entry)) return false;
    entry.socket.send(JSON.stringify(msg));
    return true;
  }

  return {
    registry,

    /** Handles an upgrade to the agent path: refuses bad versions and credentials with HTTP errors. */
    async handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
      const offered = (req.headers['sec-websocket-protocol'] ?? '').split(',').map((p) => p.trim());
      if (!offered.includes(AGENT_SUBPROTOCOL)) {
        rejectUpgrade(
          socket,
          400,
          'unsupported_protocol_version',
          `this server speaks agent protocol ${AGENT_SUBPROTOCOL}; the agent offered ${offered.filter(Boolean).join(', ') || 'none'}`,
        );
        return;
      }
      const proof = await checkedAgent(req, deps.authenticateAgent, socket, log);
      if (!proof) return;
      const { device: deviceId, claimed } = proof;
      if (!deviceId) {
        log.warn('agent refused: bad device id or token', { device_id: claimed });
        rejectUpgrade(socket, 401, 'unauthorized', 'unknown device or wrong agent token');
        return;
      }
      const version = req.headers[AGENT_HEADERS.agentVersion];
      const agentVersion = typeof version === 'string' ? version.slice(0, 64) : null;
      const forwardAllow = announcedAllowList(req.headers[AGENT_HEADERS.forwardAllow], (problem) =>
        log.warn('agent announced port-forward patterns that are not HOST:PORT; ignoring them', { device_id: deviceId, problem }),
      );
      const onError = (err: Error) => log.warn('agent socket error', { device_id: deviceId, err: err.message });
      acceptWebSocket(wss, req, socket, head, onError, (ws) => onConnection(ws, deviceId, agentVersion, forwardAllow));
    },

    /**
     * Sends a control message to a device's agent; false if it is not connected (or, with
     * `generation`, if its connection is no longer that one: a job's attempt belongs to one).
     */
    sendTo(deviceId: string, msg: RelayToAgentMessage, generation?: number): boolean {
      const entry = registry.get(deviceId);
      if (!entry || (generation !== undefined && entry.generation !== generation)) return false;
      return send(entry, msg);
    },

    /** Disconnects a device's agent with `code`. */
    disconnect(deviceId: string, code: number, reason: string): void {
      registry.get(deviceId)?.socket.close(code, reason);
    },

    /** Disconnects every agent with `code` (they reconnect, maybe elsewhere). */
    disconnectAll(code: number, reason: string): void {
      for (const entry of [...registry.entries()]) entry.socket.close(code, reason);
    },

    /** Closes every agent connection with 1001 and waits (at most `graceMs`) for them to go, and for their reports to be written. */
    async close(graceMs = 2000): Promise<void> {
      heartbeats.stop();
      const sockets = [...wss.clients];
      const closed = Promise.all(
        sockets.map((ws) => new Promise<void>((resolve) => (ws.readyState === WebSocket.CLOSED ? resolve() : ws.once('close', () => resolve())))),
      );
      for (const ws of sockets) ws.close(AGENT_CLOSE.serverShutdown, 'server shutting down');
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([closed, new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)))]);
      clearTimeout(timer);
      for (const ws of sockets) ws.terminate(); // the ones that did not answer the close in time
      await closed;
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      heartbeats.flush();
      await reports.settled();
    },
  };
}
export type AgentChannel = ReturnType<typeof createAgentChannel>;
