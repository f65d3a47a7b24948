/**
 * @module The device agent: keeps one outbound control WebSocket to the broker, reconnecting
 * with exponential backoff and full jitter (slowly, once the server keeps refusing its token:
 * reconnect.ts), watches the broker's heartbeats, and follows the broker's session messages.
 * Built from its config; dials only in `start()`. One log line per try at most, and the
 * refusals of a wrong token once (docs/settings.md, agent).
 */
import { hostname } from 'node:os';
import { agentKey, proofMatches, streamOpenSignature } from '../shared/agent-proofs';
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
import { formatTarget } from '../shared/forward-targets';
import { AGENT_SUBPROTOCOL, TETHER_VERSION } from '../shared/version';
import { connectStreamSocket, HandshakeError, type StreamSocket } from '../shared/ws-client';
import { serverUrls, type AgentConfig } from './config';
import { SessionTable, type EndReason, type KnownSession } from './sessions';
import { createStreamDialer, type StreamRequest } from './stream-dialer';
import type { ShellPool } from './shell/shell-pool';
import { openUploadJournal, type UploadJournal } from './file-transfer/upload-journal';
import { createReconnectPolicy, formatWait } from './reconnect';

export type AgentState = 'connecting' | 'connected' | 'waiting' | 'stopped';

export interface AgentDeps {
  log: Logger;
  /** Wall clock (ms), for session expiry times. */
  now?: () => number;
  backoff?: Backoff;
  /**
   * How long to wait between tries once the server has refused this agent's token three times in
   * a row (default 5 min). Not a setting: tests that run the agent in-process shorten it.
   */
  refusedRetryMs?: number;
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
  const reconnect = createReconnectPolicy({ backoff, longMs: deps.refusedRetryMs });
  let heartbeatMs = deps.heartbeatMs ?? 20_000;
  let state: AgentState = 'stopped';
  let ws: StreamSocket | undefined;
  /** The connection attempt under way, to give up when the agent stops. */
  let dialing: AbortController | undefined;
  let reconnectTimer: NodeJS.Timeout | undefined;
  let livenessTimer: NodeJS.Timeout | undefined;
  let connectedAt = 0;
  /** The server the agent connects to now (an index into `config.servers`). */
  let current = 0;
  const random = Math.random;

  // Pre-started shells, from the first shell session on (when the agent keeps them at all).
  let shells: ShellPool | undefined;
  const shellPool = (create: (log: Logger) => ShellPool) => (config.warmShell && state !== 'stopped' ? (shells ??= create(log)) : undefined);
  // Opened in start(): it first undoes what uploads of an earlier run left unfinished.
  let uploads: UploadJournal | undefined;
  const streams = createStreamDialer(config, {
    log,
    send: (msg) => send(msg),
    streamUrl: (msg) => streamUrlFor(msg),
    shells: shellPool,
    uploadJournal: () => uploads!.begin(),
  });
  const sessions = new SessionTable(now, function onSessionEnd(session: KnownSession, reason: EndReason) {
    log.info('session ended', { session_id: session.sessionId, protocol: session.protocol, reason });
    void streams.endSession(session.sessionId, reason).then(() => send({ type: 'session.ended', session_id: session.sessionId }));
  });

  const key = agentKey(config.token);

  /**
   * Where to dial a stream: the server of the control channel, or the cluster node the client
   * joined (`url`) when that is one of this agent's own servers or the control node signed the
   * request (a node or a bus that only relays cannot send the device elsewhere); never from TLS
   * to plain. Undefined: not a place to dial.
   */
  function streamUrlFor(msg: StreamRequest): string | undefined {
    const own = config.servers[current]!;
    if (msg.url === undefined) return own.streamUrl;
    let wanted: string;
    try {
      wanted = serverUrls(msg.url).streamUrl;
    } catch {
      return undefined;
    }
    if (!/^wss?:\/\//.test(wanted)) return undefined;
    if (own.connectUrl.startsWith('wss:') && !wanted.startsWith('wss:')) return undefined;
    if (config.servers.some((s) => s.streamUrl === wanted)) return wanted;
    const expected = streamOpenSignature(key, { ...msg, device_id: config.deviceId });
    return msg.sig !== undefined && proofMatches(expected, msg.sig) ? wanted : undefined;
  }

  /** After a failure, another server, chosen at random so that a failed node's agents spread over the rest. */
  function moveOn(): void {
    const n = config.servers.length;
    if (n < 2) return;
    const from = current;
    current = (current + 1 + Math.floor(random() * (n - 1))) % n;
    log.info('moving to another server', { from: config.servers[from]!.connectUrl, to: config.servers[current]!.connectUrl });
  }

  function setState(next: AgentState): void {
    state = next;
    deps.onState?.(next);
  }

  function send(msg: AgentToBrokerMessage): void {
    if (ws?.state === 'open') ws.send(JSON.stringify(msg));
  }

  /** The broker pings every heartbeat; silence for 2.5 of them means the link is dead. */
  function armLiveness(socket: StreamSocket): void {
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
    const attempt = new AbortController();
    dialing = attempt;
    connectStreamSocket(config.servers[current]!.connectUrl, {
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
      if (err instanceof HandshakeError && err.status !== undefined) {
        retry({ refusal: { status: err.status, message: refusalMessage(err.body ?? '') } });
      } else {
        retry({ failure: err.message });
      }
    });
  }

  function opened(socket: StreamSocket): void {
    dialing = undefined;
    if (state === 'stopped') return socket.terminate();
    ws = socket;
    connectedAt = performance.now();
    if (reconnect.connected()) log.info('the server accepts this agent\'s token again');
    setState('connected');
    armLiveness(socket);
    socket.on('ping', () => armLiveness(socket));
    socket.on('text', function onBrokerMessage(text) {
      armLiveness(socket);
      const msg = parseMessage(brokerToAgentMessage, text);
      if (msg) onMessage(msg);
      else log.warn('ignoring an unknown control message from the broker');
    });
    socket.on('binary', () => log.warn('ignoring binary bytes on the control channel'));
    socket.once('close', function onClose(code, reason) {
      clearTimeout(livenessTimer);
      if (ws === socket) ws = undefined;
      backoff.connectionEnded(performance.now() - connectedAt);
      connectedAt = 0;
      if (code === AGENT_CLOSE.deviceDeleted) log.error('this device was deleted from the registry');
      if (code === AGENT_CLOSE.tokenRotated) log.error('this device was given a new agent token; start the agent with it (TETHER_DEVICE_TOKEN)');
      if (state === 'stopped') return;
      retry({ closed: { code, reason, err: socket.error?.message } });
    });
  }

  /** Logs how the connection or the try ended (one line), and dials again after the backoff. */
  function retry(how: { closed?: { code: number; reason: string; err?: string }; refusal?: { status: number; message: string }; failure?: string }): void {
    const { closed, refusal, failure } = how;
    const next = reconnect.failed(refusal?.status);
    const delay_ms = next.delayMs;
    if (next.changed) log.error(tokenRefusedMessage(config.deviceId, formatWait(reconnect.longMs)), { status: 401, refusals: next.refusals });
    // One line per try; while the token is refused, only at debug (the line above said it all).
    const quiet = next.mode === 'token_refused' || refusal?.status === 401;
    if (closed) {
      log.info('disconnected from broker; reconnecting', { ...closed, delay_ms });
    } else if (refusal) {
      log[quiet ? 'debug' : 'error']('broker refused the agent', { ...refusal, delay_ms, host: hostname() });
    } else {
      log[quiet ? 'debug' : 'warn']('connection to broker failed; reconnecting', { err: failure, delay_ms });
    }
    moveOn();
    setState('waiting');
    reconnectTimer = setTimeout(connect, delay_ms);
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
    sessions,
    streams,
  };
}
export type Agent = ReturnType<typeof createAgent>;

/** The message of a refusal's JSON body (`{"message": …}`), or its text as it came. */
function refusalMessage(body: string): string {
  try {
    return (JSON.parse(body) as { message?: string }).message ?? body;
  } catch {
    return body; // not JSON: log the text as it came
  }
}

/** What an operator reads once when the server keeps refusing the token (401), and what to do. */
function tokenRefusedMessage(deviceId: string, every: string): string {
  return (
    `the server refuses this agent's token (401): the device is not registered or the token is not its own; ` +
    `register it (\`tether device add ${deviceId}\` prints a new token), set the token in TETHER_DEVICE_TOKEN ` +
    `and restart the agent; retrying every ${every}`
  );
}
