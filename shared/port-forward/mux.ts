/**
 * @module Both ends of a port-forward stream (`./protocol`): the TCP connections multiplexed over
 * one session stream, each pumped under its own credit window. The client side (the CLI) opens
 * connections for the sockets it accepts; the device side (the agent) is asked to open them and
 * accepts or refuses. Everything else is the same on both sides, so it lives here once:
 *
 * - a side sends a connection's bytes only while the peer's window allows; past it, the socket
 *   stops being read (the kernel's window then stops the application), and the rest of the chunk
 *   in hand waits for credit;
 * - a side grants credit as it hands bytes to its own socket (written out to the kernel), so a
 *   peer that reads nothing holds at most one window of that connection's bytes here, and the
 *   stream goes on carrying the others;
 * - a FIN travels as `end` (half-close), an abort or failure as `reset` with its reason;
 * - when the stream itself backs up past `highWaterMark`, every socket stops being read until it
 *   drains.
 */
import type { Socket } from 'node:net';
import { parseMessage } from '../control-channel';
import {
  CREDIT_BATCH,
  FORWARD_WINDOW,
  forwardMessage,
  MAX_FORWARD_WINDOW,
  MAX_RECORD,
  STREAM_WINDOW_BUDGET,
  recordHeader,
  knownReason,
  type ForwardMessage,
  type ResetReason,
} from './protocol';
import { createRecordReader } from './records';

/** How a mux reaches its peer: the session stream. */
export interface ForwardTransport {
  /** Sends one control message as a text frame. */
  sendMessage(message: ForwardMessage): void;
  /** Sends data records (headers and payloads, in order) as one binary frame. */
  sendRecords(parts: Buffer[]): void;
  /** Bytes handed to the transport and not yet written out. */
  readonly buffered: number;
}

/**
 * The records read in one turn of the event loop leave in one binary frame (and one writev),
 * not one each: at 64 KiB per socket read, a frame per record cost every process on the way a
 * frame's work per read. A batch is sent at the end of the turn, before any control message (so
 * an `end` never overtakes its data), or once it holds this many bytes.
 */
const BATCH_BYTES = 1024 * 1024;

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

export interface MuxOptions {
  /** Above this many bytes buffered in the transport, sockets stop being read until `drained()`. */
  highWaterMark: number;
  /** The peer broke the protocol; the stream should be closed (FORWARD_PROTOCOL_ERROR). */
  onProtocolError(why: string): void;
  /** Device side: the peer asks for connection `id` to `target`; answer with `accept` or `refuse`. */
  onOpenRequest?(id: number, target: string): void;
  /** Client side: connection `id` reached its target. */
  onOpened?(id: number, target: string): void;
  /** A connection is over. */
  onClosed?(report: ConnectionReport): void;
}

interface Connection {
  id: number;
  target: string;
  socket: Socket;
  state: 'opening' | 'open';
  /** Bytes we may still send to the peer. */
  sendCredit: number;
  /** Bytes the peer may still send us. */
  recvWindow: number;
  /** The receive window we grant: FORWARD_WINDOW, widened while the connection runs fast. */
  window: number;
  /** The peer ran into our window since we last granted credit. */
  starved: boolean;
  /** Bytes handed on to our socket and not yet granted back. */
  toGrant: number;
  /** The part of a chunk read from our socket that the window had no room for. */
  stash: Buffer | undefined;
  /** Our socket's peer sent its FIN; `end` goes out once the stash is sent. */
  endPending: boolean;
  localEnded: boolean;
  remoteEnded: boolean;
  sent: number;
  received: number;
  /** Writes to the socket are held until the end of this turn. */
  corked: boolean;
}

export class ForwardMux {
  readonly #transport: ForwardTransport;
  readonly #options: MuxOptions;
  readonly #connections = new Map<number, Connection>();
  /** Device side: ids asked for and not answered yet (true: the client gave up meanwhile). */
  readonly #pending = new Map<number, { cancelled: boolean }>();
  readonly #records = createRecordReader({
    data: (id, slice) => this.#data(id, slice),
    invalid: (why) => this.#fail(why),
  });
  /** The peer broke the protocol: nothing more it sends is acted on. */
  #failed = false;
  #transportFull = false;
  #closed = false;
  #batch: Buffer[] = [];
  #batchBytes = 0;
  #flushScheduled = false;
  /** How far the connections' windows were widened beyond FORWARD_WINDOW, together. */
  #widened = 0;

  constructor(transport: ForwardTransport, options: MuxOptions) {
    this.#transport = transport;
    this.#options = options;
  }

  /** Connections open or being opened (the device's cap counts both). */
  get size(): number {
    return this.#connections.size + this.#pending.size;
  }

  /** A text frame of the stream. */
  text(text: string): void {
    if (this.#failed) return;
    // Messages go between records, never inside one (a sender writes a record whole first).
    if (this.#records.midRecord) return this.#fail('a message in the middle of a data record');
    const message = parseMessage(forwardMessage, text);
    if (!message) return this.#fail('a text frame that is not a port-forward message');
    this.#message(message);
  }

  /** The next bytes of the stream's binary frames. */
  binary(chunk: Buffer): void {
    if (!this.#failed) this.#records.push(chunk);
  }

  #fail(why: string): void {
    if (this.#failed) return;
    this.#failed = true;
    this.#options.onProtocolError(why);
  }

  /** The transport wrote out what it held: sockets are read again. */
  drained(): void {
    if (!this.#transportFull || this.#transport.buffered > this.#options.highWaterMark) return;
    this.#transportFull = false;
    for (const c of this.#connections.values()) this.#resumeIfFree(c);
  }

  /** Client side: opens connection `id` to `target` for `socket`, which is read once it is `opened`. */
  open(id: number, target: string, socket: Socket): void {
    socket.pause();
    this.#attach(id, target, socket, 'opening');
    this.#send({ type: 'open', id, target });
  }

  /** Device side: connection `id` reached its target through `socket`. */
  accept(id: number, target: string, socket: Socket): void {
    const pending = this.#pending.get(id);
    this.#pending.delete(id);
    if (!pending || pending.cancelled || this.#closed) {
      socket.destroy(); // the client gave up, or the stream ended, while we connected
      return;
    }
    this.#attach(id, target, socket, 'open');
    this.#send({ type: 'opened', id });
    this.#resumeIfFree(this.#connections.get(id)!);
  }

  /** Device side: connection `id` cannot be opened. */
  refuse(id: number, reason: ResetReason, message: string): void {
    const pending = this.#pending.get(id);
    this.#pending.delete(id);
    if (pending && !pending.cancelled && !this.#closed) this.#send({ type: 'reset', id, reason, message });
  }

  /** Resets connection `id` from this side (an idle timeout, say), telling the peer why. */
  reset(id: number, reason: ResetReason, message: string): void {
    const c = this.#connections.get(id);
    if (c) this.#drop(c, { reason, by: 'us', message }, true);
  }

  /** The stream is gone: every connection is cut (its application sees a reset), no messages. */
  closeAll(message: string): void {
    this.#closed = true;
    this.#batch = [];
    this.#batchBytes = 0;
    for (const pending of this.#pending.values()) pending.cancelled = true;
    for (const c of [...this.#connections.values()]) this.#drop(c, { reason: 'closed', by: 'us', message }, false);
  }

  /** Sends a control message, after the records queued before it. */
  #send(message: ForwardMessage): void {
    this.#flush();
    this.#transport.sendMessage(message);
  }

  #queueRecord(header: Buffer, payload: Buffer): void {
    this.#batch.push(header, payload);
    this.#batchBytes += header.length + payload.length;
    if (this.#batchBytes >= BATCH_BYTES) return this.#flush();
    if (this.#flushScheduled) return;
    this.#flushScheduled = true;
    setImmediate(() => {
      this.#flushScheduled = false;
      this.#flush();
    });
  }

  #flush(): void {
    if (this.#batch.length === 0 || this.#closed) return;
    const parts = this.#batch;
    this.#batch = [];
    this.#batchBytes = 0;
    this.#transport.sendRecords(parts);
  }

  #attach(id: number, target: string, socket: Socket, state: Connection['state']): void {
    const c: Connection = {
      id,
      target,
      socket,
      state,
      sendCredit: FORWARD_WINDOW,
      recvWindow: FORWARD_WINDOW,
      window: FORWARD_WINDOW,
      starved: false,
      toGrant: 0,
      stash: undefined,
      endPending: false,
      localEnded: false,
      remoteEnded: false,
      sent: 0,
      received: 0,
      corked: false,
    };
    this.#connections.set(id, c);
    socket.setNoDelay(true);
    socket.on('error', () => {}); // 'close' follows, and says what became of the connection
    socket.on('data', (chunk: Buffer) => this.#pump(c, chunk));
    socket.on('end', () => {
      c.endPending = true;
      this.#sendEndIfDue(c);
    });
    socket.on('close', () => this.#socketClosed(c));
    // A 'data' listener sets the socket flowing: not while it may not send yet.
    if (state === 'opening' || this.#transportFull) socket.pause();
  }

  #message(m: ForwardMessage): void {
    if (m.type === 'open') {
      if (!this.#options.onOpenRequest) return this.#fail('only the client opens connections');
      if (this.#connections.has(m.id) || this.#pending.has(m.id)) return this.#fail(`connection ${m.id} is open already`);
      this.#pending.set(m.id, { cancelled: false });
      this.#options.onOpenRequest(m.id, m.target);
      return;
    }
    const pending = this.#pending.get(m.id);
    if (pending) {
      // Before the device answered, the client may only give up.
      if (m.type === 'reset') pending.cancelled = true;
      else this.#fail(`a ${m.type} message for connection ${m.id}, which is not open yet`);
      return;
    }
    const c = this.#connections.get(m.id);
    if (!c) return; // one that ended while this message was on its way
    switch (m.type) {
      case 'opened':
        if (c.state !== 'opening' || this.#options.onOpenRequest) return this.#fail(`connection ${m.id} opened twice`);
        c.state = 'open';
        this.#options.onOpened?.(c.id, c.target);
        this.#resumeIfFree(c);
        return;
      case 'credit':
        c.sendCredit += m.bytes;
        if (c.stash) {
          const stash = c.stash;
          c.stash = undefined;
          this.#pump(c, stash);
        }
        this.#sendEndIfDue(c);
        this.#resumeIfFree(c);
        return;
      case 'end':
        if (c.state === 'opening') return this.#fail(`an end for connection ${m.id} before it opened`);
        c.remoteEnded = true;
        c.socket.end();
        return;
      case 'reset':
        this.#drop(c, { reason: knownReason(m.reason), by: 'peer', message: m.message }, false);
        return;
    }
  }

  /** Sends what the window allows of `chunk` read from c's socket; the rest waits for credit. */
  #pump(c: Connection, chunk: Buffer): void {
    let at = 0;
    while (at < chunk.length) {
      const n = Math.min(chunk.length - at, c.sendCredit, MAX_RECORD);
      if (n === 0) {
        c.stash = chunk.subarray(at);
        c.socket.pause();
        return;
      }
      this.#queueRecord(recordHeader(c.id, n), chunk.subarray(at, at + n));
      c.sendCredit -= n;
      c.sent += n;
      at += n;
    }
    if (!this.#transportFull && this.#transport.buffered + this.#batchBytes > this.#options.highWaterMark) {
      this.#transportFull = true;
      for (const other of this.#connections.values()) other.socket.pause();
    }
  }

  /** Bytes for connection `id` from the peer. */
  #data(id: number, slice: Buffer): void {
    const c = this.#connections.get(id);
    if (!c) {
      if (this.#pending.has(id)) this.#fail(`data for connection ${id}, which is not open yet`);
      return; // one that ended while its bytes were on their way
    }
    if (c.state === 'opening') return this.#fail(`data for connection ${id} before it opened`);
    if (c.remoteEnded) return; // nothing may follow an end
    if (slice.length > c.recvWindow) {
      return this.#drop(c, { reason: 'protocol', by: 'us', message: `the peer sent more than its window of ${c.window} bytes` }, true);
    }
    c.recvWindow -= slice.length;
    c.received += slice.length;
    if (c.recvWindow < c.window / 4) c.starved = true;
    const n = slice.length;
    // A write waiting on a stalled reader keeps its buffer alive: a small slice of a large read
    // would keep all of the read (64 KiB for a byte), and the window would no longer bound memory.
    if (n * 2 < slice.buffer.byteLength) slice = Buffer.from(slice);
    // What arrives for a connection in one turn leaves in one writev, as in the broker's splice.
    if (!c.corked) {
      c.corked = true;
      c.socket.cork();
      setImmediate(() => {
        c.corked = false;
        c.socket.uncork();
      });
    }
    c.socket.write(slice, (err) => {
      if (err || !this.#connections.has(c.id)) return;
      c.toGrant += n;
      if (c.remoteEnded) return; // the peer sends nothing more
      // Credit in batches: a peer sending tiny records gets one message per CREDIT_BATCH, and a
      // sender held up by the window always has at least that much owed (windows are larger).
      if (c.toGrant >= CREDIT_BATCH) {
        let grant = c.toGrant;
        // The sender is held back by the window while our reader keeps up: double the window.
        const widen = Math.min(c.window, MAX_FORWARD_WINDOW - c.window, STREAM_WINDOW_BUDGET - this.#widened);
        if (c.starved && c.socket.writableLength === 0 && widen > 0) {
          c.window += widen;
          this.#widened += widen;
          grant += widen;
        }
        c.starved = false;
        this.#send({ type: 'credit', id: c.id, bytes: grant });
        c.recvWindow += grant;
        c.toGrant = 0;
      }
    });
  }

  #sendEndIfDue(c: Connection): void {
    if (!c.endPending || c.stash || c.localEnded || c.state !== 'open') return;
    c.localEnded = true;
    this.#send({ type: 'end', id: c.id });
  }

  #resumeIfFree(c: Connection): void {
    if (c.state === 'open' && !c.stash && !this.#transportFull && c.socket.isPaused()) c.socket.resume();
  }

  /** c's socket closed: the end of a connection both sides finished, or an abort on our side. */
  #socketClosed(c: Connection): void {
    if (this.#connections.get(c.id) !== c) return;
    const err = (c.socket as Socket & { errored?: Error | null }).errored as NodeJS.ErrnoException | null | undefined;
    if (c.localEnded && c.remoteEnded && !err) {
      this.#connections.delete(c.id);
      this.#widened -= c.window - FORWARD_WINDOW;
      this.#options.onClosed?.({ id: c.id, target: c.target, sent: c.sent, received: c.received });
      return;
    }
    this.#drop(c, { reason: 'closed', by: 'us', message: err?.code ? `the connection failed: ${err.code}` : 'the connection was closed before it finished' }, true);
  }

  #drop(c: Connection, reset: NonNullable<ConnectionReport['reset']>, tellPeer: boolean): void {
    if (this.#connections.get(c.id) !== c) return;
    this.#connections.delete(c.id);
    this.#widened -= c.window - FORWARD_WINDOW;
    if (tellPeer && !this.#closed) this.#send({ type: 'reset', id: c.id, reason: reset.reason, message: reset.message });
    // The application on this side sees a reset, as it would from a TCP peer that went away.
    if (!c.socket.destroyed) {
      if (c.socket.readyState === 'open' || c.socket.readyState === 'readOnly' || c.socket.readyState === 'writeOnly') c.socket.resetAndDestroy();
      else c.socket.destroy();
    }
    this.#options.onClosed?.({ id: c.id, target: c.target, sent: c.sent, received: c.received, reset });
  }
}
