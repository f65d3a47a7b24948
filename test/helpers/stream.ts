/** A client of a session's stream (CONTRACT 4.3) for the tests, speaking plain `ws`. */
import { WebSocket } from 'ws';
import { waitFor } from './wait';

export interface StreamClient {
  ws: WebSocket;
  /** Binary payload received so far. */
  received(): Buffer;
  /** JSON text frames received so far. */
  messages: any[];
  /** Every frame in order: a Buffer for binary, an object for text. */
  frames: Array<Buffer | any>;
  sentBytes: number;
  receivedBytes: number;
  opened: Promise<void>;
  closed: Promise<{ code: number; reason: string }>;
  send(data: Buffer | string | object): void;
  /** Waits until the binary output (as text) matches. */
  waitForOutput(pattern: RegExp, timeoutMs?: number): Promise<string>;
  waitForMessage(predicate: (m: any) => boolean, timeoutMs?: number): Promise<any>;
  /** Sends `{id, op, params}` and resolves with the answer of that id. */
  request(op: string, params?: object, timeoutMs?: number): Promise<any>;
}

let nextId = 1;

export function connectStream(url: string, headers: Record<string, string> = {}): StreamClient {
  const ws = new WebSocket(url, { headers, maxPayload: 16 * 1024 * 1024 });
  const chunks: Buffer[] = [];
  const client: StreamClient = {
    ws,
    received: () => Buffer.concat(chunks),
    messages: [],
    frames: [],
    sentBytes: 0,
    receivedBytes: 0,
    opened: new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    }),
    closed: new Promise((resolve) => ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() }))),
    send(data) {
      const payload = Buffer.isBuffer(data) || typeof data === 'string' ? data : JSON.stringify(data);
      client.sentBytes += Buffer.byteLength(payload);
      ws.send(payload, { binary: Buffer.isBuffer(data) });
    },
    waitForOutput: (pattern, timeoutMs = 10_000) =>
      waitFor(
        () => {
          const text = client.received().toString('utf8');
          return pattern.test(text) ? text : undefined;
        },
        `output matching ${pattern}`,
        timeoutMs,
      ),
    waitForMessage: (predicate, timeoutMs = 10_000) => waitFor(() => client.messages.find(predicate), 'a message', timeoutMs),
    async request(op, params = {}, timeoutMs = 10_000) {
      const id = nextId++;
      client.send({ id, op, params });
      return client.waitForMessage((m) => m.id === id && 'ok' in m, timeoutMs);
    },
  };
  ws.on('error', () => {});
  ws.on('message', (data: Buffer, isBinary) => {
    client.receivedBytes += data.length;
    if (isBinary) {
      chunks.push(data);
      client.frames.push(data);
    } else {
      const msg = JSON.parse(data.toString());
      client.messages.push(msg);
      client.frames.push(msg);
    }
  });
  return client;
}
