/**
 * @module A port-forward session's stream and the TCP (or Unix) connections it carries, for
 * `tether forward` and the `forward --stdio` master: each connection is one of the stream's
 * multiplexed connections (`shared/protocol/port-forward/`). A stream lost while the session
 * lives is dialled again; connections in flight are lost with it.
 */
import type { Socket } from 'node:net';
import { FORWARD_PROTOCOL_ERROR } from '../../shared/protocol/port-forward/protocol';
import { ForwardMux, type ConnectionReport } from '../../shared/protocol/port-forward/mux';
import { STREAM_CLOSE } from '../../shared/protocol/session-stream';
import type { WsClient } from '../../shared/websocket/client';
import { explainClose } from '../explain-close';
import { formatBytes } from '../output';
import { connectSessionSocket } from '../stream';

/** Stream bytes queued before the local sockets stop being read. */
const STREAM_HIGH_WATER = 4 * 1024 * 1024;
/** The waits between attempts to get a lost stream back. */
const RECONNECT_DELAYS_MS = [250, 1000, 2000, 5000, 10_000];
/** Close codes after which the session is over: nothing to reconnect to. */
export const FINAL_CODES = new Set<number>([
  STREAM_CLOSE.sessionClosed,
  STREAM_CLOSE.sessionExpired,
  STREAM_CLOSE.unknownSession,
  STREAM_CLOSE.noCredentials,
  STREAM_CLOSE.busy,
  FORWARD_PROTOCOL_ERROR,
]);

export const hostPort = (host: string, port: number) => `${host.includes(':') ? `[${host}]` : host}:${port}`;

export interface TunnelEvents {
  /** Routine news (a connection opened or closed), for a terminal. */
  log(line: string): void;
  /** What went wrong with a connection or the stream. */
  warn(line: string): void;
  /** The session's stream ended for good (the session closed, expired, or refused us). */
  ended(code: number, reason: string): void;
  /** Connection `id` reached its target (before any of its bytes are written to its socket). */
  opened?(id: number): void;
  /** Connection `id` is over; `lost`: cut because the stream under it ended. */
  closed?(report: ConnectionReport, lost: boolean): void;
}

/** The session's stream and the connections it carries; dialled again when lost. */
export class Tunnel {
  #ws: WsClient | undefined;
  #mux: ForwardMux | undefined;
  #nextId = 1;
  #closed = false;
  /** True while the stream's end cuts its connections: that is said once, by the stream. */
  #ending = false;
  #attempt = 0;
  #retry: NodeJS.Timeout | undefined;
  /** Why the stream last ended, in words (set before its connections are cut). */
  lastEnd: string | undefined;

  constructor(
    private readonly url: string,
    private readonly events: TunnelEvents,
  ) {}

  /** Whether the stream is up (connections can be carried). */
  get up(): boolean {
    return this.#mux !== undefined;
  }

  /** Connections open or being opened. */
  get connections(): number {
    return this.#mux?.size ?? 0;
  }

  /** Connects the stream; rejects if the first attempt fails. */
  async connect(): Promise<void> {
    const ws = await connectSessionSocket(this.url);
    if (this.#closed) return ws.close(1000, 'client done');
    this.#attempt = 0;
    const closed = new Promise<{ code: number; reason: string }>((resolve) => ws.once('close', (code, reason) => resolve({ code, reason })));
    const mux = new ForwardMux(
      {
        sendMessage: (message) => ws.send(JSON.stringify(message)),
        sendRecords: (parts) => ws.send(parts),
        get buffered() {
          return ws.bufferedAmount;
        },
      },
      {
        highWaterMark: STREAM_HIGH_WATER,
        onProtocolError: (why) => {
          this.events.warn(`the device broke the port-forward protocol (${why}); closing`);
          ws.close(FORWARD_PROTOCOL_ERROR, 'port-forward protocol error');
        },
        onOpened: (id, target) => {
          this.events.opened?.(id);
          this.events.log(`connection ${id} to ${target} open`);
        },
        onClosed: (report) => {
          this.events.closed?.(report, this.#ending);
          this.#report(report);
        },
      },
    );
    ws.on('text', (text) => mux.text(text));
    ws.on('binary', (chunk) => mux.binary(chunk));
    ws.on('drain', () => mux.drained());
    this.#ws = ws;
    this.#mux = mux;
    void closed.then(({ code, reason }) => {
      this.lastEnd = explainClose(code, reason);
      this.#endConnections(mux);
      this.#ws = undefined;
      this.#mux = undefined;
      if (this.#closed) return;
      if (FINAL_CODES.has(code)) return this.events.ended(code, reason);
      this.events.warn(`${explainClose(code, reason)}; connecting again (open connections were lost)`);
      this.#reconnectSoon();
    });
  }

  #reconnectSoon(): void {
    const delay = RECONNECT_DELAYS_MS[Math.min(this.#attempt++, RECONNECT_DELAYS_MS.length - 1)]!;
    this.#retry = setTimeout(() => {
      this.connect().catch((err: Error) => {
        if (this.#closed) return;
        this.events.warn(`${err.message}; trying again`);
        this.#reconnectSoon();
      });
    }, delay);
  }

  /**
   * Carries one accepted connection to `target` (`from` names it in messages); its id, or
   * undefined when it was dropped because the stream is down.
   */
  carry(socket: Socket, target: string, from: string): number | undefined {
    if (!this.#mux) {
      this.events.warn(`connection from ${from} dropped: the session's stream is down (reconnecting)`);
      socket.destroy();
      return undefined;
    }
    const id = this.#nextId++;
    this.events.log(`connection ${id} from ${from} -> ${target}`);
    this.#mux.open(id, target, socket);
    return id;
  }

  /** Cuts every connection `mux` carries: the stream under them is gone. */
  #endConnections(mux: ForwardMux): void {
    this.#ending = true;
    try {
      mux.closeAll('the stream ended');
    } finally {
      this.#ending = false;
    }
  }

  #report(r: ConnectionReport): void {
    // A connection cut because the stream ended is said once, by the stream.
    if (this.#ending) return;
    const bytes = `${formatBytes(r.sent)} sent, ${formatBytes(r.received)} received`;
    if (!r.reset) return this.events.log(`connection ${r.id} to ${r.target} closed (${bytes})`);
    const { reason, by, message } = r.reset;
    const line = `connection ${r.id} to ${r.target} ${resetWords(r.reset)}: ${reason}${message ? ` (${message})` : ''}; ${bytes}`;
    // The local application ending its own connection abruptly is routine; the rest is news.
    (by === 'us' && reason === 'closed' ? this.events.log : this.events.warn)(line);
  }

  /** Ends the stream and every connection; no reconnecting after this. */
  close(): void {
    this.#closed = true;
    clearTimeout(this.#retry);
    if (this.#mux) this.#endConnections(this.#mux);
    this.#ws?.close(1000, 'client done');
  }
}

/** What a reset means, in a few words for a person. */
export function resetWords(reset: NonNullable<ConnectionReport['reset']>): string {
  const { reason, by } = reset;
  if (by === 'us') return 'reset on this side';
  if (reason === 'refused' || reason === 'unreachable' || reason === 'timed_out') return 'failed on the device';
  if (reason === 'not_allowed' || reason === 'limit') return 'refused by the device';
  return 'reset by the device';
}
