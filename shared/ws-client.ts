/**
 * @module The client end of a session stream, for the agent and the CLI: a WebSocket client
 * (RFC 6455) that hands binary payloads on as the slices the socket read, as the broker's splice
 * does (`shared/ws-frames/reader.ts`), instead of reassembling every frame as ws does (a copy and
 * a fresh buffer per frame: a fifth of the CLI's time during a download, most of it garbage
 * collection; BENCHMARKS.md, issue 14).
 *
 * What a session stream needs and nothing more: text messages arrive whole (JSON frames, at most
 * `maxPayload`, checked as UTF-8); binary payloads arrive in pieces, their message boundaries not
 * kept (no protocol gives them a meaning: shell bytes, tar streams). Pings are answered, but never
 * queued: while our socket waits to drain, only the latest ping is kept (§5.5.3) and the peer is not
 * read, so a server that pings and never reads cannot fill our memory. The close
 * handshake follows §7 (the server ends the TCP connection first; we end ours once both close
 * frames have passed, and cut it if the peer does not answer a close in time). Frames are masked
 * with a zero key where masking protects nothing (`shared/ws-mask.ts`), with a random one
 * elsewhere. No extensions, no subprotocol negotiation beyond the one we offer.
 */
import { createHash, randomBytes, randomFillSync } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { isUtf8 } from 'node:buffer';
import type { Socket } from 'node:net';
import { createFrameReader } from './ws-frames/reader';
import { OPCODE, encodeMaskedHeader, unmaskInPlace } from './ws-frames/wire';
import { closePayload } from './ws-close';
import { zeroMaskFor } from './ws-mask';

const ACCEPT_GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';
const CLOSE_GRACE_MS = 5000;
/** Below this a frame's header and payload go out as one buffer; above, as two writes in one writev. */
const MERGE_BELOW = 16 * 1024;
const ZERO_KEY = Buffer.alloc(4);

export interface StreamSocketOptions {
  /** Largest message we accept, text or binary, summed over its fragments (1009 above it). */
  maxPayload: number;
  /** The subprotocol to ask for; the server must choose it. */
  protocol?: string;
  headers?: Record<string, string>;
  handshakeTimeoutMs?: number;
  /** Aborting gives up the connection attempt (the promise rejects). */
  signal?: AbortSignal;
}

export interface StreamSocketEvents {
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

export type StreamSocketState = 'open' | 'closing' | 'closed';

/** Close codes a peer may send (RFC 6455 §7.4; ws `isValidStatusCode`). */
const validPeerCode = (code: number): boolean =>
  (code >= 1000 && code <= 1014 && code !== 1004 && code !== 1005 && code !== 1006) || (code >= 3000 && code <= 4999);

/** The handshake failed: `status` and `body` are the server's HTTP answer when there was one. */
export class HandshakeError extends Error {
  constructor(
    message: string,
    readonly status?: number,
    /** The start of the answer's body (at most 64 KiB), as text. */
    readonly body?: string,
  ) {
    super(message);
  }
}

const MAX_REFUSAL_BODY = 64 * 1024;

/**
 * Dials `url` (`ws:` or `wss:`) and completes the opening handshake (§4.1); rejects with a
 * HandshakeError naming what went wrong (the server's status, a wrong accept key, a timeout) or
 * the socket's own error (refused, unreachable).
 */
export async function connectStreamSocket(url: string, options: StreamSocketOptions): Promise<StreamSocket> {
  const target = new URL(url);
  const key = randomBytes(16).toString('base64');
  // TLS loads only for wss: an agent on plain ws (a broker behind a TLS proxy on the same host,
  // or loopback) does not carry it (about 1 MiB of resident memory; BENCHMARKS.md, issue 14).
  const request = target.protocol === 'wss:' ? (await import('node:https')).request : httpRequest;
  return new Promise<StreamSocket>((resolve, reject) => {
    if (options.signal?.aborted) return reject(new HandshakeError('the connection attempt was given up'));
    const req = request({
      protocol: target.protocol === 'wss:' ? 'https:' : 'http:',
      hostname: target.hostname.replace(/^\[|\]$/g, ''),
      port: target.port,
      path: `${target.pathname}${target.search}`,
      agent: false,
      headers: {
        ...options.headers,
        connection: 'Upgrade',
        upgrade: 'websocket',
        'sec-websocket-version': '13',
        'sec-websocket-key': key,
        ...(options.protocol ? { 'sec-websocket-protocol': options.protocol } : {}),
      },
    });
    // The whole handshake, TCP connect included (req.setTimeout would start only once connected).
    const timer = setTimeout(() => fail(new HandshakeError('Opening handshake has timed out')), options.handshakeTimeoutMs ?? 10_000);
    const fail = (err: Error) => {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
      req.destroy();
      reject(err);
    };
    const onAbort = () => fail(new HandshakeError('the connection attempt was given up'));
    options.signal?.addEventListener('abort', onAbort, { once: true });
    req.on('error', fail);
    req.on('response', (res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        if (size < MAX_REFUSAL_BODY) chunks.push(chunk);
        size += chunk.length;
      });
      // 'close', not 'end': a refusal cut short in its body (a proxy dropping the connection
      // mid-answer) never ends.
      res.once('close', () => {
        const body = Buffer.concat(chunks).subarray(0, MAX_REFUSAL_BODY).toString('utf8');
        fail(new HandshakeError(`Unexpected server response: ${res.statusCode}`, res.statusCode, body));
      });
    });
    req.on('upgrade', (res: IncomingMessage, socket: Socket, head: Buffer) => {
      socket.on('error', () => {}); // replaced below; a socket never lacks a listener
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
      const expected = createHash('sha1').update(key + ACCEPT_GUID).digest('base64');
      const problem =
        res.headers.upgrade?.toLowerCase() !== 'websocket'
          ? 'Invalid Upgrade header'
          : res.headers['sec-websocket-accept'] !== expected
            ? 'Invalid Sec-WebSocket-Accept header'
            : options.protocol && res.headers['sec-websocket-protocol'] !== options.protocol
              ? 'Server sent no subprotocol or another one'
              : undefined;
      if (problem) {
        socket.destroy();
        return reject(new HandshakeError(problem, res.statusCode));
      }
      resolve(new StreamSocket(socket, head, zeroMaskFor(url), options.maxPayload));
    });
    req.end();
  });
}

export class StreamSocket extends EventEmitter<StreamSocketEvents> {
  #state: StreamSocketState = 'open';
  #closeSent = false;
  #closeReceived: { code: number; reason: string } | undefined;
  #graceTimer: NodeJS.Timeout | undefined;
  /** The last socket error, for logs ('close' follows it). */
  error: Error | undefined;

  readonly #socket: Socket;
  readonly #zeroMask: boolean;
  readonly #reader;
  /** The kind of message being read, and a text message's pieces so far. */
  #message: 'text' | 'binary' | undefined;
  #textParts: Buffer[] = [];
  /** Whether the frame being read ends its message, and how much of its payload is still to come. */
  #frameFin = false;
  #frameLeft = 0;
  /** Paused by the caller. */
  #paused = false;
  /** The payload of the latest ping not answered yet: our socket was backed up. */
  #unansweredPing: Buffer | undefined;
  /** Not reading the peer until 'drain', because a pong could not be written without queuing it. */
  #awaitingDrain = false;

  constructor(socket: Socket, head: Buffer, zeroMask: boolean, maxPayload: number) {
    super();
    this.#socket = socket;
    this.#zeroMask = zeroMask;
    socket.removeAllListeners('error');
    socket.on('error', (err) => (this.error = err));
    socket.setNoDelay(true);
    socket.setTimeout(0);
    this.#reader = createFrameReader({
      expectMasked: false,
      maxPayload,
      onFrame: (fin, opcode, length) => this.#frame(fin, opcode, length),
      onPayload: (slice) => this.#payload(slice),
      onControl: ({ opcode, payload }) => this.#control(opcode, payload),
      onProtocolError: (code, reason) => this.#fail(code, reason),
    });
    // Paused until the caller, who gets this object a turn later, has had a chance to listen or to
    // pause it; bytes that came with the handshake wait in the socket's buffer.
    socket.pause();
    if (head.length > 0) socket.unshift(head);
    setImmediate(() => {
      if (!this.#paused && !this.#awaitingDrain) socket.resume();
    });
    socket.on('data', (chunk: Buffer) => {
      this.#reader.push(chunk); // after a protocol error the reader reads nothing more
    });
    socket.on('drain', () => {
      if (this.#awaitingDrain) {
        this.#awaitingDrain = false;
        this.#answerPing();
        if (!this.#awaitingDrain && !this.#paused) socket.resume();
      }
      this.emit('drain');
    });
    socket.on('end', () => {
      // The peer ended its side: without a close frame before, the stream was cut (1006).
      if (this.#state === 'open') this.#state = 'closing';
      this.#hangUp();
    });
    socket.on('close', () => {
      this.#state = 'closed';
      clearTimeout(this.#graceTimer);
      const { code, reason } = this.#closeReceived ?? { code: 1006, reason: '' };
      this.emit('close', code, reason);
    });
  }

  #frame(fin: boolean, opcode: number, length: number): void {
    if (opcode !== OPCODE.continuation) {
      this.#message = opcode === OPCODE.text ? 'text' : 'binary';
      this.#textParts = [];
    }
    this.#frameFin = fin;
    this.#frameLeft = length;
    if (length === 0 && fin) this.#endMessage();
  }

  #payload(slice: Buffer): void {
    // Read buffers are fresh for every read, so a slice may be kept (a text message's pieces).
    if (this.#message === 'text') this.#textParts.push(slice);
    else this.emit('binary', slice);
    this.#frameLeft -= slice.length;
    if (this.#frameLeft === 0 && this.#frameFin) this.#endMessage();
  }

  #endMessage(): void {
    if (this.#message === 'text') {
      const text = this.#textParts.length === 1 ? this.#textParts[0]! : Buffer.concat(this.#textParts);
      this.#textParts = [];
      if (!isUtf8(text)) return this.#fail(1007, 'text is not UTF-8');
      this.emit('text', text.toString('utf8'));
    }
    this.#message = undefined;
  }

  get state(): StreamSocketState {
    return this.#state;
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
    if (this.#state !== 'open') return;
    this.#paused = true;
    this.#socket.pause();
  }

  resume(): void {
    this.#paused = false;
    if (!this.#awaitingDrain || this.#state !== 'open') this.#socket.resume();
  }

  /**
   * Sends one message: a Buffer (or the parts of one, sent without joining them) as binary, a
   * string as text. `callback` runs once it is written to the kernel, or with an error if the
   * stream is not open.
   */
  send(data: Buffer | readonly Buffer[] | string, callback?: (err?: Error) => void): void {
    if (this.#state !== 'open' || this.#closeSent) {
      if (callback) process.nextTick(callback, new Error('the stream is not open'));
      return;
    }
    if (typeof data === 'string') this.#write(OPCODE.text, [Buffer.from(data)], callback);
    else this.#write(OPCODE.binary, Buffer.isBuffer(data) ? [data] : data, callback);
  }

  /** Starts the close handshake once; the connection is cut if the peer does not answer in time. */
  close(code: number, reason: string, graceMs = CLOSE_GRACE_MS): void {
    if (this.#state !== 'open') return;
    this.#state = 'closing';
    this.resume(); // or the peer's close frame would never be read
    this.#sendClose(code, reason);
    this.#armGrace(graceMs);
  }

  /** Cuts the connection. */
  terminate(): void {
    this.#socket.destroy();
  }

  #write(opcode: number, parts: readonly Buffer[], callback?: (err?: Error) => void): void {
    const key = this.#zeroMask ? ZERO_KEY : randomFillSync(Buffer.allocUnsafe(4));
    let length = 0;
    for (const part of parts) length += part.length;
    const header = encodeMaskedHeader(true, opcode, length, key);
    const cb = callback ? (err?: Error | null) => callback(err ?? undefined) : undefined;
    if (!this.#zeroMask) {
      const frame = Buffer.concat([header, ...parts]);
      unmaskInPlace(frame.subarray(header.length), key, 0); // XOR is its own inverse
      this.#socket.write(frame, cb);
    } else if (length < MERGE_BELOW) {
      this.#socket.write(Buffer.concat([header, ...parts]), cb);
    } else {
      this.#socket.cork();
      this.#socket.write(header);
      parts.forEach((part, i) => this.#socket.write(part, i === parts.length - 1 ? cb : undefined));
      this.#socket.uncork();
    }
  }

  #sendClose(code: number, reason: string): void {
    if (this.#closeSent || this.#socket.writableEnded) return;
    this.#closeSent = true;
    this.#write(OPCODE.close, [closePayload(code, reason)]);
  }

  /** Answers the latest ping, unless our socket is backed up: then the peer is not read until 'drain'. */
  #answerPing(): void {
    if (this.#unansweredPing === undefined || this.#state !== 'open' || this.#closeSent) return;
    if (this.#socket.writableNeedDrain) {
      this.#awaitingDrain = true;
      this.#socket.pause();
      return;
    }
    this.#write(OPCODE.pong, [this.#unansweredPing]);
    this.#unansweredPing = undefined;
  }

  #control(opcode: number, payload: Buffer): void {
    if (opcode === OPCODE.ping) {
      this.#unansweredPing = payload;
      this.#answerPing();
      this.emit('ping');
      return;
    }
    if (opcode !== OPCODE.close) return;
    const code = payload.length >= 2 ? payload.readUInt16BE(0) : 1005;
    if (payload.length >= 2 && !validPeerCode(code)) return this.#fail(1002, 'invalid close code');
    if (payload.length > 2 && !isUtf8(payload.subarray(2))) return this.#fail(1007, 'close reason is not UTF-8');
    this.#closeReceived = { code, reason: payload.subarray(2).toString() };
    if (this.#state === 'open') this.#state = 'closing';
    // Echo the code (§5.5.1); both close frames have passed, so our side of the connection ends.
    this.#sendClose(code, '');
    this.#hangUp();
    this.#armGrace(CLOSE_GRACE_MS);
  }

  /** The peer broke the protocol: close with `code` and stop reading its frames. */
  #fail(code: number, reason: string): void {
    this.#reader.stop(); // nothing more from the chunk being read either
    this.#closeReceived ??= { code, reason };
    if (this.#state === 'open') this.#state = 'closing';
    this.#sendClose(code, reason);
    this.#hangUp();
    this.#armGrace(CLOSE_GRACE_MS);
  }

  #hangUp(): void {
    if (!this.#socket.writableEnded) this.#socket.end();
    this.resume(); // read on, to see the peer's FIN
  }

  #armGrace(ms: number): void {
    this.#graceTimer ??= setTimeout(() => this.#socket.destroy(), ms);
    this.#graceTimer.unref();
  }
}
