/**
 * @module The `port-forward` protocol on the device: the client asks for TCP connections to the
 * session's targets (`shared/protocol/port-forward/`), and the agent makes them, but only where both the
 * session and its own allow-list (`--forward-allow`) say it may: the relay checked the session's
 * targets against that list when the session opened, and the agent checks again for every
 * connection. Connections beyond `--forward-max-connections` are refused, idle ones are reset
 * after `--forward-idle-timeout`, and everything ends with the stream.
 */
import { connect, type Socket } from 'node:net';
import { formatTarget, isAllowed, parseTarget } from '../../shared/protocol/port-forward/targets';
import { FORWARD_PROTOCOL_ERROR, type ResetReason } from '../../shared/protocol/port-forward/protocol';
import { ForwardMux } from '../../shared/protocol/port-forward/mux';
import { DATA_STREAM_HIGH_WATER } from '../data-stream';
import type { Handler, HandlerFactory } from '../protocol-handler';

/** How long the device tries to reach a target before answering `timed_out`. */
const CONNECT_TIMEOUT_MS = 10_000;

/** The reset reason for a failed connect, by the socket error's code; any other code is an `error`. */
const CONNECT_ERRORS: Readonly<Record<string, ResetReason>> = {
  ECONNREFUSED: 'refused',
  ETIMEDOUT: 'timed_out',
  EHOSTUNREACH: 'unreachable',
  ENETUNREACH: 'unreachable',
  ENOTFOUND: 'unreachable',
  EAI_AGAIN: 'unreachable',
  EADDRNOTAVAIL: 'unreachable',
};
const reasonOf = (err: NodeJS.ErrnoException): ResetReason =>
  err.code !== undefined && Object.hasOwn(CONNECT_ERRORS, err.code) ? CONNECT_ERRORS[err.code]! : 'error';

const REASON_TEXT: Partial<Record<ResetReason, string>> = {
  refused: 'connection refused',
  unreachable: 'host unreachable',
  timed_out: `no answer within ${CONNECT_TIMEOUT_MS / 1000} s`,
};

export const startPortForward: HandlerFactory = (stream, ctx): Handler => {
  const { config, log } = ctx;
  const targets = new Set(ctx.targets);
  /** Sockets still connecting, with their connect timers, to cut when the stream ends. */
  const connecting = new Map<Socket, NodeJS.Timeout>();
  let stopped = false;

  const mux = new ForwardMux(
    {
      sendMessage: (message) => void stream.sendJson(message),
      sendRecords: (parts) => void stream.sendBinaryParts(parts),
      get buffered() {
        return stream.pending;
      },
    },
    {
      highWaterMark: DATA_STREAM_HIGH_WATER,
      onProtocolError(why) {
        log.warn('port-forward protocol error; closing the stream', { why });
        stream.close(FORWARD_PROTOCOL_ERROR, `port-forward protocol error: ${why}`);
      },
      onOpenRequest: open,
      onClosed(report) {
        log.debug('forwarded connection ended', { id: report.id, target: report.target, sent: report.sent, received: report.received, ...report.reset });
      },
    },
  );
  stream.on('text', (text) => mux.text(text));
  stream.on('binary', (chunk) => mux.binary(chunk));
  stream.on('drain', () => mux.drained());

  function open(id: number, requested: string): void {
    const parsed = parseTarget(requested);
    const target = parsed.ok ? formatTarget(parsed.value) : requested;
    if (!parsed.ok || !targets.has(target)) {
      log.warn('refused a connection to a target the session does not name', { id, target: requested });
      return mux.refuse(id, 'not_allowed', `${requested} is not a target of this session (${[...targets].join(', ') || 'none'})`);
    }
    if (!isAllowed(config.forwardAllow, parsed.value)) {
      log.warn('refused a connection outside the forward allow-list', { id, target });
      return mux.refuse(id, 'not_allowed', `this device does not forward to ${target} (see its --forward-allow)`);
    }
    if (mux.size > config.forwardMaxConnections) {
      return mux.refuse(id, 'limit', `this device holds at most ${config.forwardMaxConnections} connections per session`);
    }
    const socket = connect({ host: parsed.value.host.replace(/^\[|\]$/g, ''), port: parsed.value.port, allowHalfOpen: true });
    const timer = setTimeout(() => socket.destroy(Object.assign(new Error('connect timed out'), { code: 'ETIMEDOUT' })), CONNECT_TIMEOUT_MS);
    connecting.set(socket, timer);
    socket.once('error', function onConnectError(err: NodeJS.ErrnoException) {
      clearTimeout(timer);
      connecting.delete(socket);
      const reason = reasonOf(err);
      log.debug('could not connect a forwarded connection', { id, target, err: err.code ?? err.message });
      mux.refuse(id, reason, REASON_TEXT[reason] ?? err.code ?? err.message);
    });
    socket.once('connect', () => {
      clearTimeout(timer);
      connecting.delete(socket);
      socket.removeAllListeners('error');
      socket.on('error', () => {}); // the mux sees the close that follows
      if (stopped) return void socket.destroy();
      if (config.forwardIdleTimeoutS > 0) {
        socket.setTimeout(config.forwardIdleTimeoutS * 1000, () => mux.reset(id, 'idle', `no data either way for ${config.forwardIdleTimeoutS} s`));
      }
      mux.accept(id, target, socket);
    });
  }

  const stop = async (reason: string): Promise<void> => {
    if (stopped) return;
    stopped = true;
    for (const [socket, timer] of connecting) {
      clearTimeout(timer);
      socket.destroy();
    }
    connecting.clear();
    mux.closeAll(reason);
  };
  stream.on('close', () => void stop('stream closed'));
  return { stop };
};
