/**
 * @module Both ends of a port-forward stream (`./protocol`): the TCP connections multiplexed over
 * one session stream, each pumped under its own credit window (./connection). The client side
 * (the CLI) opens connections for the sockets it accepts; the device side (the agent) is asked to
 * open them and accepts or refuses. Everything else is the same on both sides, so it lives here once:
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
 *
 * What the peer sends is read and checked by ./inbound; records go out in batches (./record-batch).
 */
import type { Socket } from 'node:net';
import { ForwardConnection, type ConnectionHost, type ConnectionReport } from './connection';
import { createInbound } from './inbound';
import { FORWARD_WINDOW, type ForwardMessage, type ResetReason } from './protocol';
import { RecordBatch } from './record-batch';

export type { ConnectionReport } from './connection';

/** How a mux reaches its peer: the session stream. */
export interface ForwardTransport {
  /** Sends one control message as a text frame. */
  sendMessage(message: ForwardMessage): void;
  /** Sends data records (headers and payloads, in order) as one binary frame. */
  sendRecords(parts: Buffer[]): void;
  /** Bytes handed to the transport and not yet written out. */
  readonly buffered: number;
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

export class ForwardMux {
  readonly #transport: ForwardTransport;
  readonly #options: MuxOptions;
  readonly #connections = new Map<number, ForwardConnection>();
  /** Device side: ids asked for and not answered yet (true: the client gave up meanwhile). */
  readonly #pending = new Map<number, { cancelled: boolean }>();
  readonly #inbound;
  readonly #batch: RecordBatch;
  readonly #host: ConnectionHost;
  #transportFull = false;
  #closed = false;

  constructor(transport: ForwardTransport, options: MuxOptions) {
    this.#transport = transport;
    this.#options = options;
    this.#batch = new RecordBatch((parts) => transport.sendRecords(parts));
    const mux = this;
    this.#host = {
      queueRecord: (header, payload) => this.#batch.queue(header, payload),
      send: (message) => this.#send(message),
      get transportFull() {
        return mux.#transportFull;
      },
      queued: () => this.#queued(),
      has: (id) => this.#connections.has(id),
      widened: 0,
      socketClosed: (c) => this.#socketClosed(c),
    };
    this.#inbound = inboundOf(this.#connections, this.#pending, options, (c, reset, tellPeer) => this.#drop(c, reset, tellPeer));
  }

  /** Connections open or being opened (the device's cap counts both). */
  get size(): number {
    return this.#connections.size + this.#pending.size;
  }

  /** A text frame of the stream. */
  text(text: string): void {
    this.#inbound.text(text);
  }

  /** The next bytes of the stream's binary frames. */
  binary(chunk: Buffer): void {
    this.#inbound.binary(chunk);
  }

  /** The transport wrote out what it held: sockets are read again. */
  drained(): void {
    if (!this.#transportFull || this.#transport.buffered > this.#options.highWaterMark) return;
    this.#transportFull = false;
    for (const c of this.#connections.values()) c.resumeIfFree();
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
    const c = this.#attach(id, target, socket, 'open');
    this.#send({ type: 'opened', id });
    c.resumeIfFree();
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
    this.#batch.close();
    for (const pending of this.#pending.values()) pending.cancelled = true;
    for (const c of [...this.#connections.values()]) this.#drop(c, { reason: 'closed', by: 'us', message }, false);
  }

  /** Sends a control message, after the records queued before it. */
  #send(message: ForwardMessage): void {
    this.#batch.flush();
    this.#transport.sendMessage(message);
  }

  /** Records were queued: past the high-water mark, every socket stops being read until the stream drains. */
  #queued(): void {
    if (this.#transportFull || this.#transport.buffered + this.#batch.bytes <= this.#options.highWaterMark) return;
    this.#transportFull = true;
    for (const other of this.#connections.values()) other.socket.pause();
  }

  #attach(id: number, target: string, socket: Socket, state: ForwardConnection['state']): ForwardConnection {
    const c = new ForwardConnection(this.#host, id, target, socket, state);
    this.#connections.set(id, c);
    return c;
  }

  /** c's socket closed: the end of a connection both sides finished, or an abort on our side. */
  #socketClosed(c: ForwardConnection): void {
    if (this.#connections.get(c.id) !== c) return;
    const err = (c.socket as Socket & { errored?: Error | null }).errored as NodeJS.ErrnoException | null | undefined;
    if (c.localEnded && c.remoteEnded && !err) {
      this.#forget(c);
      this.#options.onClosed?.(c.report());
      return;
    }
    this.#drop(
      c,
      { reason: 'closed', by: 'us', message: err?.code ? `the connection failed: ${err.code}` : 'the connection was closed before it finished' },
      true,
    );
  }

  #drop(c: ForwardConnection, reset: NonNullable<ConnectionReport['reset']>, tellPeer: boolean): void {
    if (this.#connections.get(c.id) !== c) return;
    this.#forget(c);
    if (tellPeer && !this.#closed) this.#send({ type: 'reset', id: c.id, reason: reset.reason, message: reset.message });
    c.cut();
    this.#options.onClosed?.(c.report(reset));
  }

  #forget(c: ForwardConnection): void {
    this.#connections.delete(c.id);
    this.#host.widened -= c.window - FORWARD_WINDOW;
  }
}

/** What the peer sends, read into the mux's connections (./inbound). */
function inboundOf(
  connections: Map<number, ForwardConnection>,
  pending: Map<number, { cancelled: boolean }>,
  options: MuxOptions,
  drop: (c: ForwardConnection, reset: NonNullable<ConnectionReport['reset']>, tellPeer: boolean) => void,
) {
  return createInbound({
    connection: (id) => connections.get(id),
    pending,
    onOpenRequest: options.onOpenRequest && ((id, target) => options.onOpenRequest!(id, target)),
    opened(c) {
      c.state = 'open';
      options.onOpened?.(c.id, c.target);
      c.resumeIfFree();
      // A socket with nothing to send may have ended while the device connected: its end goes now.
      c.sendEndIfDue();
    },
    drop,
    protocolError: (why) => options.onProtocolError(why),
  });
}
