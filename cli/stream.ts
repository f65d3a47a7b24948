/**
 * @module The client side of a session's stream: connect to `websocket_url`, send requests and
 * bytes, and turn close codes into plain words.
 */
import { WebSocket, type RawData } from 'ws';
import { STREAM_CLOSE } from '../shared/session-stream';
import { maskingFor } from '../shared/ws-mask';
import { CliError } from './errors';

/** What a close code means to a person. */
export function explainClose(code: number, reason: string): string {
  switch (code) {
    case STREAM_CLOSE.sessionClosed:
      return reason.startsWith('session closed: ') ? `the ${reason}` : 'the session was closed';
    case STREAM_CLOSE.sessionExpired:
      return 'the session expired (its TTL ran out)';
    case STREAM_CLOSE.unknownSession:
      return 'the server does not know this session or refused its ticket';
    case STREAM_CLOSE.busy:
      return 'another client is connected to this session';
    case STREAM_CLOSE.noCredentials:
      return reason === 'token expired' || reason === 'token revoked'
        ? `your ${reason}; log in again (tether login)`
        : 'the server wants a ticket or a token for this stream';
    case STREAM_CLOSE.deviceTimeout:
      return 'the device did not answer within 10 s';
    case STREAM_CLOSE.serverShutdown:
      return 'the server is shutting down';
    default:
      return reason || `the connection closed (code ${code})`;
  }
}

export interface Stream {
  ws: WebSocket;
  /** Resolves when the stream closes, with its code and reason. */
  closed: Promise<{ code: number; reason: string }>;
  /** Sends a request and resolves with its first answer (`ok` true or false). */
  request(op: string, params?: Record<string, unknown>): Promise<{ id: number; result: any }>;
  /** Text frames that are not answers to `request` (download `done` lines, shell `exit`). */
  onMessage(listener: (msg: any) => void): void;
  onBinary(listener: (data: Buffer) => void): void;
  close(): void;
}

const toBuffer = (d: RawData) => (Array.isArray(d) ? Buffer.concat(d) : Buffer.isBuffer(d) ? d : Buffer.from(d));

/** Connects to a session's stream; rejects with a readable error if it cannot. */
export async function openStream(url: string): Promise<Stream> {
  const ws = new WebSocket(url, { perMessageDeflate: false, maxPayload: 16 * 1024 * 1024, ...maskingFor(url) });
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })),
  );
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', (err) => reject(new CliError(`cannot connect to the session's stream: ${err.message}`)));
  });
  ws.on('error', () => {}); // 'close' follows with the code

  let nextId = 1;
  const pending = new Map<number, { resolve: (v: { id: number; result: any }) => void; reject: (e: Error) => void }>();
  const messageListeners: Array<(msg: any) => void> = [];
  const binaryListeners: Array<(data: Buffer) => void> = [];

  ws.on('message', (data, isBinary) => {
    if (isBinary) {
      const buf = toBuffer(data);
      for (const l of binaryListeners) l(buf);
      return;
    }
    let msg: any;
    try {
      msg = JSON.parse(toBuffer(data).toString('utf8'));
    } catch {
      return;
    }
    const waiter = typeof msg?.id === 'number' && 'ok' in msg ? pending.get(msg.id) : undefined;
    if (waiter) {
      pending.delete(msg.id);
      if (msg.ok) waiter.resolve({ id: msg.id, result: msg.result });
      else waiter.reject(new CliError(`${msg.error?.message ?? 'request failed'} (${msg.error?.code ?? 'error'})`));
      return;
    }
    for (const l of messageListeners) l(msg);
  });
  void closed.then(({ code, reason }) => {
    for (const w of pending.values()) w.reject(new CliError(explainClose(code, reason)));
    pending.clear();
  });

  return {
    ws,
    closed,
    request(op, params = {}) {
      const id = nextId++;
      return new Promise((resolve, reject) => {
        pending.set(id, { resolve, reject });
        ws.send(JSON.stringify({ id, op, params }));
      });
    },
    onMessage: (l) => void messageListeners.push(l),
    onBinary: (l) => void binaryListeners.push(l),
    close: () => ws.close(1000),
  };
}
