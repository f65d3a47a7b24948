/**
 * WebSockets by hand, for abuse tests: the HTTP upgrade is written and read over node:net, so a
 * test can send any bytes at all after it (frames no WebSocket library would ever send), and
 * the peer's frames are parsed here. Both sides: `rawUpgrade` is a client of a real server, and
 * `startFakeWsServer` completes upgrades of a real client (the agent) and can then say anything.
 * Also the fast-check arbitraries that make the garbage.
 */
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { isUtf8 } from 'node:buffer';
import { connect, createServer, type Socket } from 'node:net';
import fc from 'fast-check';
import { waitFor } from './wait';

const WS_GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';

/** The `Sec-WebSocket-Accept` answer to a `Sec-WebSocket-Key` (RFC 6455 §4.2.2). */
export const acceptKey = (key: string): string =>
  createHash('sha1')
    .update(key + WS_GUID)
    .digest('base64');

export const OPCODE = { continuation: 0x0, text: 0x1, binary: 0x2, close: 0x8, ping: 0x9, pong: 0xa } as const;

/** One frame with every field under the caller's control, including lies. */
export interface FrameSpec {
  /** Default true. */
  fin?: boolean;
  /** RSV1-3 as three bits (RSV1 = 4); default 0. */
  rsv?: number;
  opcode: number;
  /** Clients must mask and servers must not (RFC 6455 §5.1); default true. */
  masked?: boolean;
  payload?: Uint8Array;
  /** How the length is written (7 bits, 16 or 64 bits after a marker); default the shortest. */
  lengthForm?: 7 | 16 | 64;
  /** The length the header claims, when it lies about the payload. */
  declaredLength?: bigint;
  /** The masking key of a masked frame; default random (all zeros is what our clients send on loopback). */
  key?: Buffer;
}

export function encodeFrame(spec: FrameSpec): Buffer {
  const payload = Buffer.from(spec.payload ?? []);
  const masked = spec.masked ?? true;
  const declared = spec.declaredLength ?? BigInt(payload.length);
  const form = spec.lengthForm ?? (declared < 126n ? 7 : declared < 65536n ? 16 : 64);
  const first = ((spec.fin ?? true) ? 0x80 : 0) | (((spec.rsv ?? 0) & 7) << 4) | (spec.opcode & 0xf);
  const maskBit = masked ? 0x80 : 0;
  let head: Buffer;
  if (form === 7) {
    // 126 and 127 here are markers: the peer then reads the next bytes as an extended length.
    head = Buffer.from([first, maskBit | Number(declared > 127n ? 127n : declared)]);
  } else if (form === 16) {
    head = Buffer.alloc(4);
    head[0] = first;
    head[1] = maskBit | 126;
    head.writeUInt16BE(Number(declared & 0xffffn), 2);
  } else {
    head = Buffer.alloc(10);
    head[0] = first;
    head[1] = maskBit | 127;
    head.writeBigUInt64BE(declared & 0xffff_ffff_ffff_ffffn, 2);
  }
  if (!masked) return Buffer.concat([head, payload]);
  const key = spec.key ?? randomBytes(4);
  const body = Buffer.from(payload.map((b, i) => b ^ key[i % 4]!));
  return Buffer.concat([head, key, body]);
}

/** A close frame's payload: the code, then the reason. */
export const closePayload = (code: number, reason = ''): Buffer => {
  const b = Buffer.alloc(2);
  b.writeUInt16BE(code);
  return Buffer.concat([b, Buffer.from(reason)]);
};

export interface Frame {
  fin: boolean;
  rsv: number;
  opcode: number;
  masked: boolean;
  payload: Buffer;
}

/** The code of a close frame; 1005 when it has none. */
export const closeCodeOf = (frame: Frame): number => (frame.payload.length >= 2 ? frame.payload.readUInt16BE(0) : 1005);

/** Close codes a peer may put on the wire (RFC 6455 §7.4; 1004-1006 and 1015 never are). */
export const validWireCode = (code: number): boolean => (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) || (code >= 3000 && code <= 4999);

/**
 * What is wrong with the frames a server sent, if anything: servers never mask; a close frame
 * comes at most once, last, with a code valid on the wire and a reason in UTF-8.
 */
export function serverFrameFaults(frames: Frame[]): string[] {
  const faults: string[] = [];
  if (frames.some((f) => f.masked)) faults.push('a masked frame');
  const closes = frames.filter((f) => f.opcode === OPCODE.close);
  if (closes.length > 1) faults.push(`${closes.length} close frames`);
  const close = closes[0];
  if (close) {
    if (frames.indexOf(close) !== frames.length - 1) faults.push('frames after the close frame');
    const code = closeCodeOf(close);
    if (close.payload.length === 1 || (close.payload.length >= 2 && !validWireCode(code))) faults.push(`close code ${code} (${close.payload.length} bytes)`);
    if (close.payload.length > 2 && !isUtf8(close.payload.subarray(2))) faults.push('a close reason that is not UTF-8');
  }
  return faults;
}

/** Parses the frames of one direction as bytes arrive (unmasking them when they are masked). */
export class FrameReader {
  #buf = Buffer.alloc(0);
  readonly frames: Frame[] = [];

  push(chunk: Buffer): void {
    this.#buf = Buffer.concat([this.#buf, chunk]);
    for (;;) {
      const b = this.#buf;
      if (b.length < 2) return;
      let length = b[1]! & 0x7f;
      let at = 2;
      if (length === 126) {
        if (b.length < 4) return;
        length = b.readUInt16BE(2);
        at = 4;
      } else if (length === 127) {
        if (b.length < 10) return;
        length = Number(b.readBigUInt64BE(2));
        at = 10;
      }
      const masked = (b[1]! & 0x80) !== 0;
      const key = masked ? b.subarray(at, at + 4) : undefined;
      if (masked) at += 4;
      if (b.length < at + length) return;
      const payload = Buffer.from(b.subarray(at, at + length));
      if (key) for (let i = 0; i < payload.length; i++) payload[i]! ^= key[i % 4]!;
      this.frames.push({ fin: (b[0]! & 0x80) !== 0, rsv: (b[0]! >> 4) & 7, opcode: b[0]! & 0xf, masked, payload });
      this.#buf = b.subarray(at + length);
    }
  }
}

/** Splits `data` at `cuts` (any numbers: taken modulo the length) into pieces to write one by one. */
export function pieces(data: Buffer, cuts: number[]): Buffer[] {
  if (data.length === 0) return [];
  const at = [...new Set(cuts.map((c) => c % data.length))].filter((c) => c > 0).sort((a, b) => a - b);
  const out: Buffer[] = [];
  let from = 0;
  for (const cut of at) {
    out.push(data.subarray(from, cut));
    from = cut;
  }
  out.push(data.subarray(from));
  return out;
}

/** How a test hangs up: FIN and wait (`end`), FIN and go (`destroy`), or RST (`reset`). */
export type Ending = 'end' | 'destroy' | 'reset';

export interface RawClient {
  socket: Socket;
  /** The port of our end, to find the server's end in the kernel's socket table. */
  localPort: number;
  /** Status of the server's answer to the upgrade (101 when it accepted). */
  status: number;
  headers: Record<string, string>;
  /** The body of a refusal, as far as it came. */
  body(): Buffer;
  /** Frames the server sent after a 101. */
  frames: Frame[];
  /** The code of the server's close frame, once one came. */
  closeCode(): number | undefined;
  /** Resolves once the connection is closed both ways. */
  closed: Promise<void>;
  waitForFrame(predicate: (f: Frame) => boolean, what: string, timeoutMs?: number): Promise<Frame>;
  /** Writes each piece as its own write, letting the server read in between; stops if the socket goes. */
  writePieces(parts: Buffer[]): Promise<void>;
  /** Hangs up the way `ending` says. */
  hangUp(ending: Ending): void;
}

export interface UpgradeOptions {
  /** Added to (or, undefined, taken from) the usual upgrade headers. */
  headers?: Record<string, string | undefined>;
  /** GET unless said otherwise. */
  method?: string;
  protocol?: string;
  /** Bytes sent in the same write as the request: the server gets them as the upgrade's `head`. */
  head?: Buffer;
  /** Resets the connection right after sending the request, without waiting for an answer. */
  resetAtOnce?: boolean;
}

/**
 * Upgrades `path` on 127.0.0.1:`port` by hand and resolves once the answer's headers came (or,
 * with `resetAtOnce`, once the request is sent and the connection reset).
 */
export function rawUpgrade(port: number, path: string, options: UpgradeOptions = {}): Promise<RawClient> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const key = randomBytes(16).toString('base64');
    const reader = new FrameReader();
    let answer = Buffer.alloc(0);
    let body = Buffer.alloc(0);
    let client: RawClient | undefined;
    const closed = new Promise<void>((r) => socket.once('close', () => r()));
    // Writing garbage to a peer that hung up fails with EPIPE or ECONNRESET: expected here.
    socket.on('error', (err) => {
      if (!client) reject(err);
    });
    socket.on('connect', function sendRequest() {
      const headers: Record<string, string | undefined> = {
        Host: `127.0.0.1:${port}`,
        Upgrade: 'websocket',
        Connection: 'Upgrade',
        'Sec-WebSocket-Key': key,
        'Sec-WebSocket-Version': '13',
        ...(options.protocol ? { 'Sec-WebSocket-Protocol': options.protocol } : {}),
        ...options.headers,
      };
      const lines = Object.entries(headers)
        .filter(([, v]) => v !== undefined)
        .map(([k, v]) => `${k}: ${v}\r\n`);
      const request = `${options.method ?? 'GET'} ${path} HTTP/1.1\r\n${lines.join('')}\r\n`;
      socket.write(Buffer.concat([Buffer.from(request), options.head ?? Buffer.alloc(0)]));
      if (options.resetAtOnce) {
        client = made(0, {}, socket.localPort ?? 0);
        socket.resetAndDestroy();
        resolve(client);
      }
    });
    socket.on('data', function onData(chunk: Buffer) {
      if (client) {
        if (client.status === 101) reader.push(chunk);
        else body = Buffer.concat([body, chunk]);
        return;
      }
      answer = Buffer.concat([answer, chunk]);
      const end = answer.indexOf('\r\n\r\n');
      if (end < 0) return;
      const [statusLine, ...lines] = answer.subarray(0, end).toString('latin1').split('\r\n');
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(statusLine ?? '')?.[1] ?? 0);
      const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
      client = made(status, headers, socket.localPort ?? 0);
      const rest = answer.subarray(end + 4);
      if (status === 101) {
        if (headers['sec-websocket-accept'] !== acceptKey(key)) reject(new Error('the server answered with a wrong Sec-WebSocket-Accept'));
        reader.push(rest);
      } else body = rest;
      resolve(client);
    });
    socket.once('close', () => {
      if (!client) reject(new Error(`the server closed the connection to ${path} without answering`));
    });

    function made(status: number, headers: Record<string, string>, localPort: number): RawClient {
      return {
        socket,
        localPort,
        status,
        headers,
        body: () => body,
        frames: reader.frames,
        closeCode() {
          const close = reader.frames.find((f) => f.opcode === OPCODE.close);
          return close ? closeCodeOf(close) : undefined;
        },
        closed,
        waitForFrame: (predicate, what, timeoutMs = 10_000) => waitFor(() => reader.frames.find(predicate), what, timeoutMs),
        async writePieces(parts) {
          for (const part of parts) {
            if (socket.destroyed || !socket.writable) return;
            socket.write(part);
            // One turn of the event loop: the server (in this process) reads this piece alone.
            await new Promise((r) => setImmediate(r));
          }
        },
        hangUp(ending) {
          if (ending === 'end') socket.end();
          else if (ending === 'destroy') socket.destroy();
          else if (!socket.destroyed) socket.resetAndDestroy();
        },
      };
    }
  });
}

/**
 * True while the server still holds its end of the TCP connection from our `clientPort`: it is
 * ESTABLISHED or CLOSE_WAIT (the peer hung up, the server has not closed) in `/proc/net/tcp`.
 */
export function serverHolds(serverPort: number, clientPort: number): boolean {
  const hex = (p: number) => p.toString(16).toUpperCase().padStart(4, '0');
  const local = `0100007F:${hex(serverPort)}`;
  const remote = `0100007F:${hex(clientPort)}`;
  return readFileSync('/proc/net/tcp', 'utf8')
    .split('\n')
    .some((line) => {
      const [, l, r, state] = line.trim().split(/\s+/);
      return l === local && r === remote && (state === '01' || state === '08');
    });
}

/** `promise`, or a failure naming `what` once `ms` have passed. */
export async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/**
 * Waits until the server has closed its end of our connection after we hung up `ending`: after
 * a FIN we see its FIN; after a destroy or a reset we look in the kernel's socket table.
 */
export async function serverLetGo(serverPort: number, client: RawClient, ending: Ending, timeoutMs = 10_000): Promise<void> {
  if (ending === 'end') return within(client.closed, timeoutMs, 'the server to close the connection');
  await waitFor(() => !serverHolds(serverPort, client.localPort), 'the server to close its end of the connection', timeoutMs);
}

// The fake server: a real client's upgrade, completed by hand.

export interface FakeUpgrade {
  socket: Socket;
  path: string;
  /** Request headers, names in lower case. */
  headers: Record<string, string>;
  /** Frames the client sent after the upgrade. */
  frames: Frame[];
  /** Answers 101 with the right accept key (and `protocol`, when given), plus `after` in the same write. */
  accept(protocol?: string, after?: Buffer): void;
  /** Closes the connection at once (RST when `reset`). */
  drop(reset?: boolean): void;
}

export interface FakeWsServer {
  port: number;
  /** Every upgrade request so far, in order. */
  upgrades: FakeUpgrade[];
  close(): Promise<void>;
}

/** A TCP server on 127.0.0.1:0 that reads upgrade requests and hands them to `onUpgrade`. */
export async function startFakeWsServer(onUpgrade: (u: FakeUpgrade) => void): Promise<FakeWsServer> {
  const upgrades: FakeUpgrade[] = [];
  const sockets = new Set<Socket>();
  const server = createServer(function onConnection(socket) {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    socket.on('error', () => {}); // the client may reset a connection we fill with garbage
    let request = Buffer.alloc(0);
    const reader = new FrameReader();
    let upgrade: FakeUpgrade | undefined;
    socket.on('data', (chunk: Buffer) => {
      if (upgrade) return reader.push(chunk);
      request = Buffer.concat([request, chunk]);
      const end = request.indexOf('\r\n\r\n');
      if (end < 0) return;
      const [requestLine, ...lines] = request.subarray(0, end).toString('latin1').split('\r\n');
      const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
      reader.push(request.subarray(end + 4));
      upgrade = {
        socket,
        path: requestLine?.split(' ')[1] ?? '',
        headers,
        frames: reader.frames,
        accept(protocol, after = Buffer.alloc(0)) {
          const lines = [
            'HTTP/1.1 101 Switching Protocols',
            'Upgrade: websocket',
            'Connection: Upgrade',
            `Sec-WebSocket-Accept: ${acceptKey(headers['sec-websocket-key'] ?? '')}`,
            ...(protocol ? [`Sec-WebSocket-Protocol: ${protocol}`] : []),
          ];
          socket.write(Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`), after]));
        },
        drop(reset = false) {
          if (reset) socket.resetAndDestroy();
          else socket.destroy();
        },
      };
      upgrades.push(upgrade);
      onUpgrade(upgrade);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    port: (server.address() as { port: number }).port,
    upgrades,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

// Garbage, by fast-check.

/** Interesting close codes: reserved, never-on-the-wire, out of range, and fine ones. */
const CLOSE_CODES = [0, 999, 1000, 1001, 1004, 1005, 1006, 1011, 1012, 1014, 1015, 1016, 2999, 3000, 4000, 4999, 5000, 65535];

/** Byte strings that are not UTF-8: a lone continuation, overlong, a surrogate, past U+10FFFF, cut short. */
export const INVALID_UTF8 = [[0xff], [0x80], [0xc0, 0x80], [0xc3, 0x28], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0xe2, 0x82]].map((b) => Buffer.from(b));

const payloadArb: fc.Arbitrary<Uint8Array> = fc.oneof(
  { weight: 4, arbitrary: fc.uint8Array({ maxLength: 40 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }).map((s) => Buffer.from(s)) },
  {
    weight: 2,
    arbitrary: fc
      .tuple(fc.string({ maxLength: 8 }), fc.constantFrom(...INVALID_UTF8), fc.string({ maxLength: 8 }))
      .map(([a, bad, b]) => Buffer.concat([Buffer.from(a), bad, Buffer.from(b)])),
  },
  { weight: 2, arbitrary: fc.tuple(fc.constantFrom(...CLOSE_CODES), fc.string({ maxLength: 20 })).map(([code, reason]) => closePayload(code, reason)) },
  { weight: 1, arbitrary: fc.uint8Array({ minLength: 1, maxLength: 1 }) }, // a close payload of one byte
  { weight: 1, arbitrary: fc.uint8Array({ minLength: 126, maxLength: 300 }) }, // over the control-frame limit
);

/** A frame a conforming client could send (masked or not, as the direction wants). */
export function validFrameArb(masked: boolean): fc.Arbitrary<FrameSpec> {
  return fc
    .oneof(
      fc.record({ opcode: fc.constantFrom(OPCODE.binary), payload: fc.uint8Array({ maxLength: 64 }) }),
      fc.record({ opcode: fc.constantFrom(OPCODE.text), payload: fc.string({ maxLength: 64 }).map((s) => Buffer.from(s)) }),
      fc.record({ opcode: fc.constantFrom(OPCODE.ping, OPCODE.pong), payload: fc.uint8Array({ maxLength: 125 }) }),
      fc.record({
        opcode: fc.constant(OPCODE.close),
        payload: fc.tuple(fc.constantFrom(1000, 1001, 3000, 4999), fc.string({ maxLength: 30 })).map(([c, r]) => closePayload(c, r)),
      }),
    )
    .map((f) => ({ ...f, masked }));
}

/**
 * A frame with anything wrong, or nothing: FIN and RSV bits, opcodes 0-15, the mask bit either
 * way, lengths in any encoding that may lie (huge, longer or shorter than the payload), control
 * frames over 125 bytes, continuations without a start, text that is not UTF-8, close frames with
 * bad codes or one byte.
 */
export function anyFrameArb(masked: boolean, maxPayload: number): fc.Arbitrary<FrameSpec> {
  const lie = fc.oneof(
    fc.constantFrom(2n ** 63n, 2n ** 64n - 1n, 2n ** 53n, 2n ** 32n, BigInt(maxPayload), BigInt(maxPayload + 1), 65536n, 126n, 125n),
    fc.bigInt({ min: 0n, max: 300n }),
  );
  return fc.record(
    {
      fin: fc.oneof({ weight: 3, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
      rsv: fc.oneof({ weight: 3, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.integer({ min: 0, max: 7 }) }),
      opcode: fc.oneof({ weight: 3, arbitrary: fc.constantFrom(0, 1, 2, 8, 9, 10) }, { weight: 1, arbitrary: fc.integer({ min: 0, max: 15 }) }),
      masked: fc.oneof({ weight: 3, arbitrary: fc.constant(masked) }, { weight: 1, arbitrary: fc.constant(!masked) }),
      payload: payloadArb,
      lengthForm: fc.constantFrom<7 | 16 | 64 | undefined>(undefined, undefined, undefined, 7, 16, 64),
      declaredLength: lie,
    },
    { requiredKeys: ['opcode', 'payload'] },
  );
}

/** What a fuzz case writes: frames (mostly broken, some fine) and runs of pure random bytes. */
export type Piece = { frame: FrameSpec } | { bytes: Uint8Array };

export function garbageArb(masked: boolean, maxPayload: number): fc.Arbitrary<Piece[]> {
  const piece: fc.Arbitrary<Piece> = fc.oneof(
    { weight: 4, arbitrary: anyFrameArb(masked, maxPayload).map((frame) => ({ frame })) },
    { weight: 3, arbitrary: validFrameArb(masked).map((frame) => ({ frame })) },
    { weight: 1, arbitrary: fc.uint8Array({ minLength: 1, maxLength: 200 }).map((bytes) => ({ bytes })) },
  );
  return fc.array(piece, { minLength: 1, maxLength: 6 });
}

export const encodePieces = (parts: Piece[]): Buffer => Buffer.concat(parts.map((p) => ('frame' in p ? encodeFrame(p.frame) : Buffer.from(p.bytes))));

/** Where to cut the bytes into separate writes. */
export const cutsArb = fc.array(fc.nat(), { maxLength: 6 });

export const endingArb = fc.constantFrom<Ending>('end', 'end', 'destroy', 'reset');
