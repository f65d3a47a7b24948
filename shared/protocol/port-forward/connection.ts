/**
 * @module One TCP connection of a port-forward stream, on either side, pumped under its credit
 * windows (`./protocol`): its socket's bytes go to the peer only while the peer's window allows
 * (past it, the socket stops being read, and the rest of the chunk in hand waits for credit), and
 * the peer's bytes are handed to the socket, credit granted back as the kernel takes them, the
 * window widened while the sender keeps running into it and the socket keeps up.
 */
import type { Socket } from 'node:net';
import {
  CREDIT_BATCH,
  FORWARD_WINDOW,
  MAX_FORWARD_WINDOW,
  MAX_RECORD,
  STREAM_WINDOW_BUDGET,
  recordHeader,
  type ForwardMessage,
  type ResetReason,
} from './protocol';

/** What became of a connection, for logs and the user. */
export interface ConnectionReport {
  id: number;
  target: string;
  /** Bytes of this connection sent to the peer, and received from it. */
  sent: number;
  received: number;
  /** Set when the connection was reset rather than closed by both sides. */
  reset?: { reason: ResetReason; by: 'peer' | 'us'; message?: string | undefined };
}

/** What a connection needs of the stream it is multiplexed on (the mux). */
export interface ConnectionHost {
  /** Queues a data record for the peer. */
  queueRecord(header: Buffer, payload: Buffer): void;
  /** Sends a control message, after the records queued before it. */
  send(message: ForwardMessage): void;
  /** The stream is backed up: sockets are not read until it drains. */
  readonly transportFull: boolean;
  /** Records were queued: the stream may have backed up. */
  queued(): void;
  /** Whether connection `id` is still one of the stream's. */
  has(id: number): boolean;
  /** How far the stream's connections widened their windows beyond FORWARD_WINDOW, together. */
  widened: number;
  /** The socket closed. */
  socketClosed(c: ForwardConnection): void;
}

export class ForwardConnection {
  /** Bytes we may still send to the peer. */
  #sendCredit = FORWARD_WINDOW;
  /** Bytes the peer may still send us. */
  recvWindow = FORWARD_WINDOW;
  /** The receive window we grant: FORWARD_WINDOW, widened while the connection runs fast. */
  window = FORWARD_WINDOW;
  /** The peer ran into our window since we last granted credit. */
  #starved = false;
  /** Bytes handed on to our socket and not yet granted back. */
  #toGrant = 0;
  /** The part of a chunk read from our socket that the window had no room for. */
  #stash: Buffer | undefined;
  /** Our socket's peer sent its FIN; `end` goes out once the stash is sent. */
  #endPending = false;
  localEnded = false;
  remoteEnded = false;
  sent = 0;
  received = 0;
  /** Writes to the socket are held until the end of this turn. */
  #corked = false;

  constructor(
    readonly host: ConnectionHost,
    readonly id: number,
    readonly target: string,
    readonly socket: Socket,
    public state: 'opening' | 'open',
  ) {
    socket.setNoDelay(true);
    socket.on('error', () => {}); // 'close' follows, and says what became of the connection
    socket.on('data', (chunk: Buffer) => this.pump(chunk));
    socket.on('end', () => {
      this.#endPending = true;
      this.sendEndIfDue();
    });
    socket.on('close', () => host.socketClosed(this));
    // A 'data' listener sets the socket flowing: not while it may not send yet.
    if (state === 'opening' || host.transportFull) socket.pause();
  }

  /** Sends what the window allows of `chunk` read from the socket; the rest waits for credit. */
  pump(chunk: Buffer): void {
    let at = 0;
    while (at < chunk.length) {
      const n = Math.min(chunk.length - at, this.#sendCredit, MAX_RECORD);
      if (n === 0) {
        this.#stash = chunk.subarray(at);
        this.socket.pause();
        return;
      }
      this.host.queueRecord(recordHeader(this.id, n), chunk.subarray(at, at + n));
      this.#sendCredit -= n;
      this.sent += n;
      at += n;
    }
    this.host.queued();
  }

  /** The peer granted `bytes` more: what waited goes, and the socket is read again. */
  credit(bytes: number): void {
    this.#sendCredit += bytes;
    if (this.#stash) {
      const stash = this.#stash;
      this.#stash = undefined;
      this.pump(stash);
    }
    this.sendEndIfDue();
    this.resumeIfFree();
  }

  /** Bytes from the peer, within its window: handed to the socket, credit granted once written. */
  receive(slice: Buffer): void {
    this.recvWindow -= slice.length;
    this.received += slice.length;
    if (this.recvWindow < this.window / 4) this.#starved = true;
    const n = slice.length;
    // A write waiting on a stalled reader keeps its buffer alive: a small slice of a large read
    // would keep all of the read (64 KiB for a byte), and the window would no longer bound memory.
    if (n * 2 < slice.buffer.byteLength) slice = Buffer.from(slice);
    // What arrives for a connection in one turn leaves in one writev, as in the relay's splice.
    if (!this.#corked) {
      this.#corked = true;
      this.socket.cork();
      setImmediate(() => {
        this.#corked = false;
        this.socket.uncork();
      });
    }
    this.socket.write(slice, (err) => {
      if (err || !this.host.has(this.id)) return;
      this.#toGrant += n;
      if (!this.remoteEnded) this.#grant(); // after an end the peer sends nothing more
    });
  }

  /**
   * Credit in batches: a peer sending tiny records gets one message per CREDIT_BATCH, and a sender
   * held up by the window always has at least that much owed (windows are larger).
   */
  #grant(): void {
    if (this.#toGrant < CREDIT_BATCH) return;
    let grant = this.#toGrant;
    // The sender is held back by the window while our reader keeps up: double the window.
    const widen = Math.min(this.window, MAX_FORWARD_WINDOW - this.window, STREAM_WINDOW_BUDGET - this.host.widened);
    if (this.#starved && this.socket.writableLength === 0 && widen > 0) {
      this.window += widen;
      this.host.widened += widen;
      grant += widen;
    }
    this.#starved = false;
    this.host.send({ type: 'credit', id: this.id, bytes: grant });
    this.recvWindow += grant;
    this.#toGrant = 0;
  }

  /** The peer's side has no more data: so has our socket's peer. */
  remoteEnd(): void {
    this.remoteEnded = true;
    this.socket.end();
  }

  sendEndIfDue(): void {
    if (!this.#endPending || this.#stash || this.localEnded || this.state !== 'open') return;
    this.localEnded = true;
    this.host.send({ type: 'end', id: this.id });
  }

  resumeIfFree(): void {
    if (this.state === 'open' && !this.#stash && !this.host.transportFull && this.socket.isPaused()) this.socket.resume();
  }

  /** What became of the connection. */
  report(reset?: ConnectionReport['reset']): ConnectionReport {
    return { id: this.id, target: this.target, sent: this.sent, received: this.received, ...(reset && { reset }) };
  }

  /** The application on this side sees a reset, as it would from a TCP peer that went away. */
  cut(): void {
    const socket = this.socket;
    if (socket.destroyed) return;
    if (socket.readyState !== 'open' && socket.readyState !== 'readOnly' && socket.readyState !== 'writeOnly') return void socket.destroy();
    try {
      socket.resetAndDestroy();
    } catch {
      socket.destroy(); // a Unix socket (the `forward --stdio` master's) has no reset to send
    }
  }
}
