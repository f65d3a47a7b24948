/**
 * @module tether's WebSocket client (RFC 6455), for the agent (its control channel and its data
 * streams) and the CLI (session streams): it hands binary payloads on as the slices the socket
 * read, as the relay's splice does (`shared/websocket/frames/reader.ts`), instead of reassembling every
 * frame as ws does (a copy and a fresh buffer per frame: a fifth of the CLI's time during a
 * download, most of it garbage collection; BENCHMARKS.md, issue 14).
 *
 * What these connections need and nothing more: text messages arrive whole (JSON frames, at most
 * `maxPayload`, checked as UTF-8: ./ws-client/messages); binary payloads arrive in pieces. Pings
 * are answered, but never queued (`shared/websocket/frames/pong-gate.ts`). The close handshake follows §7
 * (the server ends the TCP connection first; we end ours once both close frames have passed, and
 * cut it if the peer does not answer a close in time). Frames are masked with a zero key where
 * masking protects nothing (./ws-client/frame-writer). No extensions, no subprotocol negotiation
 * beyond the one we offer (./ws-client/handshake).
 */
import { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';
import { readClosePayload } from './close';
import { CLOSE_GRACE_MS, createClientClosing, type WsClientState } from './client/closing';
import { writeFrame } from './client/frame-writer';
import { openingHandshake, type HandshakeOptions } from './client/handshake';
import { createMessageReader } from './client/messages';
import { createPongGate } from './frames/pong-gate';
import { createFrameReader } from './frames/reader';
import { OPCODE } from './frames/wire';
import { zeroMaskFor } from './mask';

export { HandshakeError } from './client/handshake';
export type { WsClientState } from './client/closing';

export interface WsClientOptions extends HandshakeOptions {
  /** Largest message we accept, text or binary, summed over its fragments (1009 above it). */
  maxPayload: number;
}

export interface WsClientEvents {
  /** A whole text message, valid UTF-8. */
  text: [text: string];
  /** The next bytes of binary messages, as they arrive. */
  binary: [data: Buffer];
  /** The peer pinged (answered at once, or once our socket drains). */
  ping: [];
  /** Everything handed to `send` was written to the kernel. */
  drain: [];
  /** Once, when the connection is gone: the peer's close code and reason, or 1006 if it sent none. */
  close: [code: number, reason: string];
}

/** Dials `url` (`ws:` or `wss:`); rejects with a HandshakeError, or the socket's own error (refused, unreachable). */
export function connectWsClient(url: string, options: WsClientOptions): Promise<WsClient> {
  return openingHandshake(url, options, (socket, head) => new WsClient(socket, head, zeroMaskFor(url), options.maxPayload));
}

export class WsClient extends EventEmitter<WsClientEvents> {
  readonly #conn = { state: 'open' as WsClientState };
  /** The last socket error, for logs ('close' follows it). */
  error: Error | undefined;

  readonly #socket: Socket;
  readonly #zeroMask: boolean;
  readonly #reader;
  readonly #pongs;
  readonly #closing;
  /** Paused by the caller. */
  #paused = false;

  constructor(socket: Socket, head: Buffer, zeroMask: boolean, maxPayload: number) {
    super();
    this.#socket = socket;
    this.#zeroMask = zeroMask;
    socket.removeAllListeners('error');
    socket.on('error', (err) => (this.error = err));
    socket.setNoDelay(true);
    socket.setTimeout(0);
    const messages = createMessageReader({
      text: (text) => this.emit('text', text),
      binary: (slice) => this.emit('binary', slice),
      invalid: (code, reason) => this.#closing.fail(code, reason),
    });
    this.#reader = createFrameReader({
      expectMasked: false,
      maxPayload,
      onFrame: messages.frame,
      onPayload: messages.payload,
      onControl: ({ opcode, payload }) => this.#control(opcode, payload),
      onProtocolError: (code, reason) => this.#closing.fail(code, reason),
    });
    this.#closing = createClientClosing({
      socket,
      conn: this.#conn,
      write: (opcode, parts) => this.#write(opcode, parts),
      resume: () => this.resume(),
      stopReading: () => this.#reader.stop(),
    });
    this.#pongs = createPongGate(socket, {
      canAnswer: () => this.#conn.state === 'open' && !this.#closing.sent,
      sendPong: (payload) => this.#write(OPCODE.pong, [payload]),
    });
    // Paused until the caller, who gets this object a turn later, has had a chance to listen or to
    // pause it; bytes that came with the handshake wait in the socket's buffer.
    socket.pause();
    if (head.length > 0) socket.unshift(head);
    setImmediate(() => {
      if (!this.#paused && !this.#pongs.awaitingDrain) socket.resume();
    });
    socket.on('data', (chunk: Buffer) => this.#reader.push(chunk)); // after a protocol error the reader reads nothing more
    socket.on('drain', () => {
      if (this.#pongs.drained() && !this.#paused) socket.resume();
      this.emit('drain');
    });
    socket.on('end', () => this.#closing.ended());
    socket.on('close', () => {
      const { code, reason } = this.#closing.socketClosed();
      this.emit('close', code, reason);
    });
  }

  get state(): WsClientState {
    return this.#conn.state;
  }

  /** Bytes handed to `send` and not yet written to the kernel. */
  get bufferedAmount(): number {
    return this.#socket.writableLength;
  }

  get isPaused(): boolean {
    return this.#paused;
  }

  /** Stops reading the peer's frames (they wait in the kernel and, beyond, at the peer). */
  pause(): void {
    if (this.#conn.state !== 'open') return;
    this.#paused = true;
    this.#socket.pause();
  }

  resume(): void {
    this.#paused = false;
    if (!this.#pongs.awaitingDrain || this.#conn.state !== 'open') this.#socket.resume();
  }

  /**
   * Sends one message: a Buffer (or the parts of one, sent without joining them) as binary, a
   * string as text. `callback` runs once it is written to the kernel, or with an error if the
   * stream is not open.
   */
  send(data: Buffer | readonly Buffer[] | string, callback?: (err?: Error) => void): void {
    if (this.#conn.state !== 'open' || this.#closing.sent) {
      if (callback) process.nextTick(callback, new Error('the stream is not open'));
      return;
    }
    if (typeof data === 'string') this.#write(OPCODE.text, [Buffer.from(data)], callback);
    else this.#write(OPCODE.binary, Buffer.isBuffer(data) ? [data] : data, callback);
  }

  /** Starts the close handshake once; the connection is cut if the peer does not answer in time. */
  close(code: number, reason: string, graceMs = CLOSE_GRACE_MS): void {
    this.#closing.close(code, reason, graceMs);
  }

  /** Cuts the connection. */
  terminate(): void {
    this.#socket.destroy();
  }

  #write(opcode: number, parts: readonly Buffer[], callback?: (err?: Error) => void): void {
    writeFrame(this.#socket, this.#zeroMask, opcode, parts, callback);
  }

  #control(opcode: number, payload: Buffer): void {
    if (opcode === OPCODE.ping) {
      this.#pongs.ping(payload);
      this.emit('ping');
      return;
    }
    if (opcode !== OPCODE.close) return;
    const close = readClosePayload(payload);
    if (close.ok) this.#closing.peerClosed(close.code, close.reason);
    else this.#closing.fail(close.code, close.reason);
  }
}
