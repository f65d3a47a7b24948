/**
 * @module The device agent: keeps one outbound control WebSocket to the broker, reconnecting
 * with exponential backoff and full jitter, watches the broker's heartbeats, and follows the
 * broker's session messages. Built from its config; dials only in `start()`.
 */
import { hostname } from 'node:os';
import { WebSocket } from 'ws';
import { createBackoff, type Backoff } from '../shared/backoff';
import type { Logger } from '../shared/log';
import {
  AGENT_CLOSE,
  AGENT_HEADERS,
  brokerToAgentMessage,
  parseMessage,
  type AgentToBrokerMessage,
  type BrokerToAgentMessage,
} from '../shared/control-channel';
import { AGENT_SUBPROTOCOL, TETHER_VERSION } from '../shared/version';
import type { AgentConfig } from './config';
import { SessionTable, type EndReason, type KnownSession } from './sessions';
import { createStreamDialer } from './stream-dialer';
import { createShellPool, type ShellPool } from './shell/shell-pool';
import { openUploadJournal, type UploadJournal } from './file-transfer/upload-journal';

export type AgentState = 'connecting' | 'connected' | 'waiting' | 'stopped';

export interface AgentDeps {
  log: Logger;
  /** Wall clock (ms), for session expiry times. */
  now?: () => number;
  backoff?: Backoff;
  /** Until the broker's welcome says otherwise. */
  heartbeatMs?: number;
  /** Called on every state change (tests and the entry point's logs). */
  onState?: (state: AgentState) => void;
}

/** A connection that lived this long counts as stable and resets the backoff. */
export const STABLE_CONNECTION_MS = 10_000;

export function createAgent(config: Readonly<AgentConfig>, deps: AgentDeps) {
  const { log } = deps;
  const now = deps.now ?? Date.now;
  const backoff = deps.backoff ?? createBackoff({ baseMs: 1000, maxMs: 30_000, stableMs: STABLE_CONNECTION_MS });
  let heartbeatMs = deps.heartbeatMs ?? 20_000;
  let state: AgentState = 'stopped';
  let ws: WebSocket | undefined;
  let reconnectTimer: NodeJS.Timeout | undefined;
  let livenessTimer: NodeJS.Timeout | undefined;
  let connectedAt = 0;

  // Pre-started shells, from the first shell session on (when the agent keeps them at all).
  let shells: ShellPool | undefined;
  const shellPool = () => (config.warmShell && state !== 'stopped' ? (shells ??= createShellPool(log)) : undefined);
  // Opened in start(): it first undoes what uploads of an earlier run left unfinished.
  let uploads: UploadJournal | undefined;
  const streams = createStreamDialer(config, {
    log,
    send: (msg) => send(msg),
    shells: shellPool,
    uploadJournal: () => uploads!.begin(),
  });
  const sessions = new SessionTable(now, function onSessionEnd(session: KnownSession, reason: EndReason) {
    log.info('session ended', { session_id: session.sessionId, protocol: session.protocol, reason });
    void streams.endSession(session.sessionId, reason).then(() => send({ type: 'session.ended', session_id: session.sessionId }));
  });

  function setState(next: AgentState): void {
    state = next;
    deps.onState?.(next);
  }

  function send(msg: AgentToBrokerMessage): void {
    if (ws?.readyState === WebSocket.OPEN) ws.send(JSON.stringify(msg));
  }

  /** The broker pings every heartbeat; silence for 2.5 of them means the link is dead. */
  function armLiveness(socket: WebSocket): void {
    clearTimeout(livenessTimer);
    livenessTimer = setTimeout(() => {
      log.warn('no heartbeat from the broker; reconnecting', { silent_ms: heartbeatMs * 2.5 });
      socket.terminate();
    }, heartbeatMs * 2.5);
  }

  function onMessage(msg: BrokerToAgentMessage): void {
    switch (msg.type) {
      case 'welcome':
        heartbeatMs = msg.heartbeat_ms;
        log.info('connected to broker', { server_version: msg.server_version, heartbeat_ms: msg.heartbeat_ms });
        break;
      case 'session.opened':
        sessions.add({ sessionId: msg.session_id, protocol: msg.protocol, expiresAt: Date.parse(msg.expires_at) });
        log.info('session opened', { session_id: msg.session_id, protocol: msg.protocol, expires_at: msg.expires_at });
        break;
      case 'session.close':
        sessions.end(msg.session_id, msg.reason);
        void streams.endSession(msg.session_id, msg.reason); // also when this agent never heard of the session
        break;
      case 'stream.open':
        // The expiry travels with every stream request, so even an agent that restarted after
        // the session was opened enforces it on its own.
        if (!sessions.get(msg.session_id)) {
          sessions.add({ sessionId: msg.session_id, protocol: msg.protocol, expiresAt: Date.parse(msg.expires_at) });
        }
        if (Date.parse(msg.expires_at) <= now()) {
          send({ type: 'stream.refused', stream_id: msg.stream_id, message: 'the session has expired' });
          break;
        }
        streams.open(msg);
        break;
    }
  }

  function connect(): void {
    reconnectTimer = undefined;
    if (state === 'stopped') return;
    setState('connecting');
    const socket = new WebSocket(config.connectUrl, AGENT_SUBPROTOCOL, {
      headers: {
        authorization: `Bearer ${config.token}`,
        [AGENT_HEADERS.deviceId]: config.deviceId,
        [AGENT_HEADERS.agentVersion]: TETHER_VERSION,
      },
      handshakeTimeout: 10_000,
      maxPayload: 1024 * 1024,
      perMessageDeflate: false,
    });
    ws = socket;

    socket.on('open', function onOpen() {
      connectedAt = performance.now();
      setState('connected');
      armLiveness(socket);
    });
    socket.on('ping', () => armLiveness(socket));
    socket.on('message', function onBrokerMessage(data, isBinary) {
      armLiveness(socket);
      const msg = isBinary ? undefined : parseMessage(brokerToAgentMessage, data.toString());
      if (msg) onMessage(msg);
      else log.warn('ignoring an unknown control message from the broker');
    });
    socket.on('unexpected-response', function onRefused(req, res) {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.length < 16 && chunks.push(c));
      // 'close', not 'end': a refusal cut short in its body (a proxy dropping the connection
      // mid-answer) never ends, and ws would then leave this socket CONNECTING for ever, its
      // handshake timer gone with the connection: the agent would never dial again.
      res.once('close', function onRefusalOver() {
        let message = Buffer.concat(chunks).toString('utf8');
        try {
          message = (JSON.parse(message) as { message?: string }).message ?? message;
        } catch {
          // not JSON: log the text as it came
        }
        log.error('broker refused the agent', { status: res.statusCode, message, host: hostname() });
        req.destroy();
        socket.terminate();
      });
    });
    socket.on('error', (err) => log.warn('connection to broker failed', { err: err.message }));
    socket.on('close', function onClose(code, reason) {
      clearTimeout(livenessTimer);
      if (ws === socket) ws = undefined;
      const lived = connectedAt > 0 ? performance.now() - connectedAt : 0;
      connectedAt = 0;
      if (lived > 0) backoff.connectionEnded(lived);
      if (code === AGENT_CLOSE.deviceDeleted) log.error('this device was deleted from the registry');
      if (state === 'stopped') return;
      const delay = backoff.next();
      log.info('disconnected from broker; reconnecting', { code, reason: reason.toString(), delay_ms: delay });
      setState('waiting');
      reconnectTimer = setTimeout(connect, delay);
    });
  }

  return {
    /** Starts dialing the broker; returns at once. */
    start(): void {
      if (state !== 'stopped') return;
      uploads = openUploadJournal(config.stateDir, config.deviceId, log);
      setState('connecting');
      connect();
    },

    /** Ends every session, closes the connection and stops reconnecting. */
    async stop(): Promise<void> {
      if (state === 'stopped') return;
      setState('stopped');
      clearTimeout(reconnectTimer);
      sessions.endAll('agent_stopping');
      await streams.stopAll();
      shells?.stop();
      shells = undefined;
      uploads?.close();
      const socket = ws;
      if (!socket || socket.readyState === WebSocket.CLOSED) return;
      await new Promise<void>((resolve) => {
        const force = setTimeout(() => socket.terminate(), 2000);
        socket.once('close', () => {
          clearTimeout(force);
          resolve();
        });
        if (socket.readyState === WebSocket.CONNECTING) socket.terminate();
        else socket.close(1000, 'agent stopping');
      });
    },

    get state(): AgentState {
      return state;
    },
    sessions,
    streams,
  };
}
export type Agent = ReturnType<typeof createAgent>;
