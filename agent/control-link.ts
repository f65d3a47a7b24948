/**
 * @module The agent's control channel to the relay: one outbound WebSocket at a time, dialled
 * again with exponential backoff and full jitter (slowly, once the server keeps refusing its
 * token: ./reconnect), on another of its servers after a failure (./servers), and cut when the
 * relay's heartbeats stop. The relay's session messages go to the agent; the welcome sets the
 * heartbeat. One log line per try at most, and the refusals of a wrong token once
 * (docs/settings.md, agent).
 */
import type { Backoff } from './backoff';
import { AGENT_CLOSE, AGENT_HEADERS, relayToAgentMessage, type AgentToRelayMessage, type RelayToAgentMessage } from '../shared/protocol/control-channel';
import { formatTarget } from '../shared/protocol/port-forward/targets';
import type { Logger } from '../shared/log';
import { parseTextFrame } from '../shared/protocol/text-frame';
import { AGENT_SUBPROTOCOL, TETHER_VERSION } from '../shared/version';
import { connectWsClient, HandshakeError, type WsClient } from '../shared/websocket/client';
import type { AgentConfig } from './config';
import { logTryEnd, refusalMessage, tokenReplacedMessage, type ReconnectPolicy, type TryEnd } from './reconnect';
import type { ServerChoice } from './servers';

export type AgentState = 'connecting' | 'connected' | 'waiting' | 'stopped';

/** The relay's messages the agent acts on (the link takes the welcome itself). */
export type SessionMessage = Exclude<RelayToAgentMessage, { type: 'welcome' }>;

export interface ControlLinkDeps {
  log: Logger;
  backoff: Backoff;
  reconnect: ReconnectPolicy;
  servers: ServerChoice;
  /** Until the relay's welcome says otherwise. */
  heartbeatMs: number;
  onMessage(msg: SessionMessage): void;
  /** After each connection's welcome, before any other message of the relay is handled (the agent reports its jobs here). */
  onWelcome?: () => void;
  onState?: (state: AgentState) => void;
}

export function createControlLink(config: Readonly<AgentConfig>, deps: ControlLinkDeps) {
  const { log, backoff, reconnect, servers } = deps;
  let heartbeatMs = deps.heartbeatMs;
  let state: AgentState = 'stopped';
  let ws: WsClient | undefined;
  /** The connection attempt under way, to give up when the agent stops. */
  let dialing: AbortController | undefined;
  let reconnectTimer: NodeJS.Timeout | undefined;
  let livenessTimer: NodeJS.Timeout | undefined;
  let connectedAt = 0;
  /** The server closed the connection because the device's token was replaced (4411): its 401s then mean that. */
  let tokenReplaced = false;

  function setState(next: AgentState): void {
    state = next;
    deps.onState?.(next);
  }

  /** The relay pings every heartbeat; silence for 2.5 of them means the link is dead. */
  function armLiveness(socket: WsClient): void {
    clearTimeout(livenessTimer);
    livenessTimer = setTimeout(() => {
      log.warn('no heartbeat from the broker; reconnecting', { silent_ms: heartbeatMs * 2.5 });
      socket.terminate();
    }, heartbeatMs * 2.5);
  }

  function connect(): void {
    reconnectTimer = undefined;
    if (state === 'stopped') return;
    setState('connecting');
    const attempt = new AbortController();
    dialing = attempt;
    connectWsClient(servers.current.connectUrl, {
      protocol: AGENT_SUBPROTOCOL,
      headers: {
        authorization: `Bearer ${config.token}`,
        [AGENT_HEADERS.deviceId]: config.deviceId,
        [AGENT_HEADERS.agentVersion]: TETHER_VERSION,
        [AGENT_HEADERS.forwardAllow]: config.forwardAllow.map(formatTarget).join(','),
      },
      handshakeTimeoutMs: 10_000,
      maxPayload: 1024 * 1024,
      signal: attempt.signal,
    }).then(opened, function onConnectFailed(err: Error) {
      dialing = undefined;
      if (state === 'stopped') return;
      if (err instanceof HandshakeError && err.status !== undefined) retry({ refusal: { status: err.status, message: refusalMessage(err.body ?? '') } });
      else retry({ failure: err.message });
    });
  }

  function opened(socket: WsClient): void {
    dialing = undefined;
    if (state === 'stopped') return socket.terminate();
    ws = socket;
    connectedAt = performance.now();
    tokenReplaced = false;
    if (reconnect.connected()) log.info("the server accepts this agent's token again");
    setState('connected');
    armLiveness(socket);
    socket.on('ping', () => armLiveness(socket));
    socket.on('text', function onBrokerMessage(text) {
      armLiveness(socket);
      const msg = parseTextFrame(relayToAgentMessage, text);
      if (!msg) return log.warn('ignoring an unknown control message from the broker');
      if (msg.type !== 'welcome') return deps.onMessage(msg);
      heartbeatMs = msg.heartbeat_ms;
      log.info('connected to broker', { server_version: msg.server_version, heartbeat_ms: msg.heartbeat_ms });
      deps.onWelcome?.();
    });
    socket.on('binary', () => log.warn('ignoring binary bytes on the control channel'));
    socket.once('close', function onClose(code, reason) {
      clearTimeout(livenessTimer);
      if (ws === socket) ws = undefined;
      backoff.connectionEnded(performance.now() - connectedAt);
      connectedAt = 0;
      if (code === AGENT_CLOSE.deviceDeleted) log.error('this device was deleted from the registry');
      if (code === AGENT_CLOSE.tokenRotated) {
        tokenReplaced = true;
        log.error(tokenReplacedMessage(config.deviceId));
      }
      if (state === 'stopped') return;
      retry({ closed: { code, reason, err: socket.error?.message } });
    });
  }

  /** Logs how the connection or the try ended, and dials again (another server, if it has several) after the backoff. */
  function retry(end: TryEnd): void {
    const next = reconnect.failed(end.refusal?.status);
    logTryEnd(log, end, next, { deviceId: config.deviceId, longMs: reconnect.longMs, tokenReplaced });
    servers.moveOn();
    setState('waiting');
    reconnectTimer = setTimeout(connect, next.delayMs);
  }

  return {
    /** Starts dialing the relay; returns at once. */
    start(): void {
      if (state !== 'stopped') return;
      setState('connecting');
      connect();
    },

    /** Sends a message to the relay when connected (dropped otherwise: the relay learns again on reconnect). */
    send(msg: AgentToRelayMessage): void {
      if (ws?.state === 'open') ws.send(JSON.stringify(msg));
    },

    /** Stops dialing and reconnecting; the connection stays open until `close()`. */
    halt(): void {
      setState('stopped');
      clearTimeout(reconnectTimer);
    },

    /** Gives up a dial under way and closes the connection (1000), cut after 2 s. */
    async close(): Promise<void> {
      dialing?.abort();
      const socket = ws;
      if (!socket || socket.state === 'closed') return;
      await new Promise<void>((resolve) => {
        const force = setTimeout(() => socket.terminate(), 2000);
        socket.once('close', () => {
          clearTimeout(force);
          resolve();
        });
        socket.close(1000, 'agent stopping');
      });
    },

    get state(): AgentState {
      return state;
    },
  };
}
export type ControlLink = ReturnType<typeof createControlLink>;
