/**
 * @module The data streams this agent serves: dials a data WebSocket when the broker asks
 * (`stream.open`), runs the protocol's handler on it, and ends it when the client leaves, the
 * session closes or expires, or the agent stops. Refuses streams beyond `maxSessions`.
 */
import { WebSocket } from 'ws';
import type { Logger } from '../shared/log';
import type { StagingJournal } from '../shared/tar-extract';
import { AGENT_HEADERS, type AgentToBrokerMessage, type SessionProtocol } from '../shared/control-channel';
import { STREAM_CLOSE, STREAM_END } from '../shared/session-stream';
import { AGENT_SUBPROTOCOL, TETHER_VERSION } from '../shared/version';
import { maskingFor } from '../shared/ws-mask';
import { Channel } from './channel';
import type { AgentConfig } from './config';
import { startDiagnostics } from './handlers/diagnostics';
import { startFileTransfer } from './handlers/file-transfer';
import { startShell } from './handlers/shell';
import type { ShellPool } from './handlers/shell-pool';
import type { Handler, HandlerFactory } from './handlers/types';
import type { EndReason } from './sessions';

const HANDLERS: Record<SessionProtocol, HandlerFactory> = {
  shell: startShell,
  diagnostics: startDiagnostics,
  'file-transfer': startFileTransfer,
};

interface ActiveStream {
  streamId: string;
  sessionId: string;
  ws: WebSocket;
  handler?: Handler;
}

export interface StreamRequest {
  session_id: string;
  stream_id: string;
  protocol: SessionProtocol;
}

export function createStreamServer(
  config: Readonly<AgentConfig>,
  deps: {
    log: Logger;
    send(msg: AgentToBrokerMessage): void;
    shells?: () => ShellPool | undefined;
    uploadJournal?: () => StagingJournal;
  },
) {
  const { log } = deps;
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
    const ws = new WebSocket(config.streamUrl, AGENT_SUBPROTOCOL, {
      headers: {
        authorization: `Bearer ${config.token}`,
        [AGENT_HEADERS.deviceId]: config.deviceId,
        [AGENT_HEADERS.agentVersion]: TETHER_VERSION,
        [AGENT_HEADERS.streamId]: req.stream_id,
      },
      handshakeTimeout: 10_000,
      maxPayload: 4 * 1024 * 1024,
      perMessageDeflate: false,
      ...maskingFor(config.streamUrl),
    });
    const stream: ActiveStream = { streamId: req.stream_id, sessionId: req.session_id, ws };
    active.set(req.stream_id, stream);
    const slog = log.child({ session_id: req.session_id, protocol: req.protocol });
    ws.once('open', () => {
      const channel = new Channel(ws);
      try {
        stream.handler = HANDLERS[req.protocol](channel, {
          sessionId: req.session_id,
          log: slog,
          config,
          shells: deps.shells,
          uploadJournal: deps.uploadJournal,
        });
        slog.info('stream started');
      } catch (err) {
        slog.error('could not start the handler', { err: (err as Error).message });
        channel.close(STREAM_CLOSE.internalError, `the device could not start ${req.protocol}`);
      }
    });
    ws.on('error', (err) => slog.warn('stream socket error', { err: err.message }));
    ws.once('close', (code) => {
      active.delete(req.stream_id);
      slog.info('stream ended', { code });
      void stream.handler?.stop('stream closed');
    });
  }

  async function end(stream: ActiveStream, code: number, reason: string): Promise<void> {
    active.delete(stream.streamId);
    if (stream.ws.readyState === WebSocket.OPEN || stream.ws.readyState === WebSocket.CONNECTING) {
      if (stream.ws.readyState === WebSocket.CONNECTING) stream.ws.terminate();
      else stream.ws.close(code, reason);
    }
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
