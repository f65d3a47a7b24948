/**
 * @module A session and its stream, from the browser: open the session (closing yours of the same
 * protocol on that device first when asked), connect to its `websocket_url` (the ticket in it is
 * the stream's credential), and speak the protocol's frames (docs/session-streams.md).
 */
import { api, ApiError, type Session } from './api';

export interface StreamClose {
  code: number;
  reason: string;
}

/** Opens a session; a 409 (one of yours is open) closes yours and tries again when `replace`. */
export async function openSession(device: string, protocol: string, replace = true): Promise<Session> {
  const body = { device_id: device, protocol };
  try {
    return await api<Session>('POST', '/v1/remote-access/sessions', body);
  } catch (err) {
    if (!(err instanceof ApiError) || err.status !== 409 || !replace) throw err;
    const q = new URLSearchParams({ device_id: device, protocol, status: 'open' });
    const open = await api<Session[]>('GET', `/v1/remote-access/sessions?${q}`);
    if (open.length === 0) throw err; // someone else's: not ours to close
    for (const s of open) await api('DELETE', `/v1/remote-access/sessions/${s.session_id}`);
    return api<Session>('POST', '/v1/remote-access/sessions', body);
  }
}

export class SessionStream {
  readonly ws: WebSocket;
  readonly opened: Promise<void>;
  readonly closed: Promise<StreamClose>;
  #binary: ((data: Uint8Array) => void) | undefined;
  #text: ((message: Record<string, unknown>) => void) | undefined;
  #waiting = new Map<number, (answer: Record<string, unknown>) => void>();
  #nextId = 1;

  constructor(url: string) {
    this.ws = new WebSocket(url);
    this.ws.binaryType = 'arraybuffer';
    this.opened = new Promise((resolve, reject) => {
      this.ws.addEventListener('open', () => resolve(), { once: true });
      this.ws.addEventListener('close', () => reject(new Error('the stream closed before it opened')), { once: true });
    });
    this.opened.catch(() => {});
    this.closed = new Promise((resolve) => this.ws.addEventListener('close', (e) => resolve({ code: e.code, reason: e.reason }), { once: true }));
    this.ws.addEventListener('message', (e: MessageEvent<ArrayBuffer | string>) => {
      if (typeof e.data !== 'string') return this.#binary?.(new Uint8Array(e.data));
      let message: Record<string, unknown>;
      try {
        message = JSON.parse(e.data) as Record<string, unknown>;
      } catch {
        return;
      }
      const waiter = typeof message.id === 'number' ? this.#waiting.get(message.id) : undefined;
      if (waiter) waiter(message);
      else this.#text?.(message);
    });
  }

  onBinary(f: (data: Uint8Array) => void): void {
    this.#binary = f;
  }

  onText(f: (message: Record<string, unknown>) => void): void {
    this.#text = f;
  }

  sendJson(message: unknown): void {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(message));
  }

  sendBytes(data: Uint8Array): void {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(data);
  }

  /**
   * Sends a request and calls `onAnswer` with each frame answering it (an upload and a download
   * are answered more than once), until `onAnswer` returns true.
   */
  request(op: string, params: Record<string, unknown>, onAnswer: (answer: Record<string, unknown>) => boolean): number {
    const id = this.#nextId++;
    this.#waiting.set(id, (answer) => {
      if (onAnswer(answer)) this.#waiting.delete(id);
    });
    this.sendJson({ id, op, params });
    return id;
  }

  /** A request answered once: its result, or an Error with the device's message. */
  call<T>(op: string, params: Record<string, unknown> = {}): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.request(op, params, (answer) => {
        if (answer.ok === true) resolve(answer.result as T);
        else reject(new Error(((answer.error as { message?: string }) ?? {}).message ?? 'the device refused'));
        return true;
      });
      void this.closed.then((c) => reject(new Error(closeWords(c))));
    });
  }

  close(): void {
    if (this.ws.readyState === WebSocket.OPEN || this.ws.readyState === WebSocket.CONNECTING) this.ws.close(1000, 'console done');
  }
}

/** A stream's close code in plain words (docs/session-streams.md, close codes). */
export function closeWords({ code, reason }: StreamClose): string {
  const words: Record<number, string> = {
    1000: 'the stream ended',
    1001: 'the server or the device is shutting down',
    4000: 'the session was closed',
    4001: 'the session expired',
    4004: 'the server does not know this session or refused its ticket',
    4009: 'another client is connected to this session',
    4401: 'your token is no longer valid',
    4504: 'the device did not answer in time',
  };
  return `${words[code] ?? 'the connection closed'}${reason && !words[code]?.includes(reason) ? ` (${reason})` : ''}`;
}
