/**
 * @module Dials the session data streams: when the relay asks (`stream.open` on the control
 * channel), opens an outbound data WebSocket to the stream URL, runs the protocol's handler on
 * it, and ends it when the client leaves, the session closes or expires, or the agent stops.
 * Refuses streams beyond `maxSessions` (docs/control-channel.md, data streams).
 */
import { agentKey, streamProof } from '../shared/auth/agent-proofs';
import type { Logger } from '../shared/log';
import type { StagingJournal } from '../shared/files/tar-extract';
import { AGENT_HEADERS, type AgentToRelayMessage, type SessionProtocol, type StreamMode } from '../shared/protocol/control-channel';
import { STREAM_CLOSE, STREAM_END } from '../shared/protocol/stream-close';
import { AGENT_SUBPROTOCOL, TETHER_VERSION } from '../shared/version';
import { connectWsClient, type WsClient } from '../shared/websocket/client';
import type { AgentConfig } from './config';
import { DataStream } from './data-stream';
import type { Handler, HandlerContext, HandlerFactory } from './protocol-handler';
import type { EndReason } from './sessions';

/**
 * Each protocol's handler, loaded with its first session: an idle agent holds neither node-pty
 * nor tar-stream (issue 14, agent idle memory). Loading takes a millisecond, once.
 */
const HANDLERS: Record<SessionProtocol, () => Promise<HandlerFactory>> = {
  shell: () => import('./shell/handler').then((m) => m.startShell),
  diagnostics: () => import('./diagnostics/handler').then((m) => m.startDiagnostics),
  'file-transfer': () => import('./file-transfer/handler').then((m) => m.startFileTransfer),
  'port-forward': () => import('./port-forward/handler').then((m) => m.startPortForward),
};
/** A shell stream whose client asked for one command (`mode: exec`): no PTY, no node-pty loaded. */
const loadExec = () => import('./exec/exec-stream').then((m) => m.startExecStream);

interface ActiveStream {
  streamId: string;
  sessionId: string;
  /** Gives up the connection attempt while there is no socket yet. */
  dialing: AbortController;
  socket?: WsClient;
  handler?: Handler;
}

export interface StreamRequest {
  session_id: string;
  stream_id: string;
  protocol: SessionProtocol;
  expires_at: string;
  /** Where a port-forward session's connections may go. */
  targets?: string[] | undefined;
  /** The cluster node to dial the stream at, when not the agent's own server. */
  url?: string | undefined;
  /** The control node's signature, for a `url` that is not one of the agent's own servers. */
  sig?: string | undefined;
  /** A shell stream's mode: `exec` runs the command its client sends first; else a login shell. */
  mode?: StreamMode | undefined;
}

/** The agent's data streams: dialled on request, ended by session or all at once. */
export function createStreamDialer(
  config: Readonly<AgentConfig>,
  deps: {
    log: Logger;
    send(msg: AgentToRelayMessage): void;
    /** Where to dial a stream the relay asked for (at its `url`, or its own server); undefined: nowhere allowed. */
    streamUrl(req: StreamRequest): string | undefined;
    shells?: HandlerContext['shells'];
    uploadJournal?: () => StagingJournal;
  },
) {
  const { log } = deps;
  const key = agentKey(config.token);
  const active = new Map<string, ActiveStream>();

  function open(req: StreamRequest): void {
    if (active.size >= config.maxSessions) {
      log.warn('refusing a stream: session cap reached', { session_id: req.session_id, max_sessions: config.maxSessions });
      deps.send({
        type: 'stream.refused',
        stream_id: req.stream_id,
        message: `this device serves at most ${config.maxSessions} sessions at once`,
      });
      return;
    }
    const streamUrl = deps.streamUrl(req);
    if (streamUrl === undefined) {
      log.warn('refusing a stream at a URL it will not dial', { session_id: req.session_id, url: req.url });
      deps.send({
        type: 'stream.refused',
        stream_id: req.stream_id,
        message: `the stream is at ${String(req.url).slice(0, 200)}, which is not one of this device's servers and not signed by the control node, or not http(s), or would leave TLS`,
      });
      return;
    }
    const handlerLoaded = req.protocol === 'shell' && req.mode === 'exec' ? loadExec() : HANDLERS[req.protocol]();
    const dialing = new AbortController();
    const stream: ActiveStream = { streamId: req.stream_id, sessionId: req.session_id, dialing };
    active.set(req.stream_id, stream);
    const slog = log.child({ session_id: req.session_id, protocol: req.protocol });
    const connected = connectWsClient(streamUrl, {
      protocol: AGENT_SUBPROTOCOL,
      // Not the token: a proof bound to this stream, which no one who sees it can use elsewhere.
      headers: {
        [AGENT_HEADERS.streamProof]: streamProof(key, req.stream_id),
        [AGENT_HEADERS.deviceId]: config.deviceId,
        [AGENT_HEADERS.agentVersion]: TETHER_VERSION,
        [AGENT_HEADERS.streamId]: req.stream_id,
      },
      handshakeTimeoutMs: 10_000,
      maxPayload: 4 * 1024 * 1024,
      signal: dialing.signal,
    });
    connected.then(
      (socket) => {
        if (active.get(req.stream_id) !== stream) return socket.terminate(); // ended while dialling
        stream.socket = socket;
        socket.pause(); // the client's first frames wait for the handler
        const dataStream = new DataStream(socket);
        socket.once('close', (code) => {
          if (socket.error) slog.warn('stream socket error', { err: socket.error.message });
          active.delete(req.stream_id);
          slog.info('stream ended', { code });
          void stream.handler?.stop('stream closed');
        });
        handlerLoaded
          .then((startHandler) => {
            if (socket.state !== 'open') return;
            socket.resume();
            stream.handler = startHandler(dataStream, {
              sessionId: req.session_id,
              targets: req.targets ?? [],
              log: slog,
              config,
              shells: deps.shells,
              uploadJournal: deps.uploadJournal,
            });
            slog.info('stream started');
          })
          .catch((err: Error) => {
            slog.error('could not start the handler', { err: err.message });
            dataStream.close(STREAM_CLOSE.internalError, `the device could not start ${req.protocol}`);
          });
      },
      (err: Error) => {
        active.delete(req.stream_id);
        if (!dialing.signal.aborted) slog.warn('could not open the stream', { err: err.message });
      },
    );
  }

  async function end(stream: ActiveStream, code: number, reason: string): Promise<void> {
    active.delete(stream.streamId);
    if (stream.socket) stream.socket.close(code, reason);
    else stream.dialing.abort();
    await stream.handler?.stop(reason);
  }

  return {
    open,

    /** Ends the session's streams (closed, expired, or the agent stopping). */
    async endSession(sessionId: string, reason: EndReason): Promise<void> {
      const { code, text } = STREAM_END[reason];
      await Promise.all([...active.values()].filter((s) => s.sessionId === sessionId).map((s) => end(s, code, text)));
    },

    /** Ends every stream (the agent is stopping). */
    async stopAll(): Promise<void> {
      const { code, text } = STREAM_END.agent_stopping;
      await Promise.all([...active.values()].map((s) => end(s, code, text)));
    },

    get size(): number {
      return active.size;
    },
  };
}
