/**
 * The session-stream WebSocket client (`shared/websocket/client.ts`) against real peers on port 0: ws's
 * server where a conforming server will do, and raw TCP servers (`test/helpers/raw-ws.ts`) where a
 * test needs bytes no library would send, or needs to see the client's bytes exactly as written.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer as createHttpServer, type IncomingMessage, type Server as HttpServer } from 'node:http';
import { connect as netConnect, createServer as createNetServer, type AddressInfo, type Server as NetServer, type Socket } from 'node:net';
import { networkInterfaces } from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocketServer, type ServerOptions, type WebSocket } from 'ws';
import { connectWsClient, HandshakeError, type WsClient, type WsClientOptions } from '../../../../shared/websocket/client';
import { zeroMaskFor } from '../../../../shared/websocket/mask';
import {
  INVALID_UTF8,
  OPCODE,
  acceptKey,
  closeCodeOf,
  closePayload,
  encodeFrame,
  startFakeWsServer,
  within,
  type FakeUpgrade,
  type Frame,
} from '../../../helpers/raw-ws';
import { waitFor } from '../../../helpers/wait';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const MiB = 1024 * 1024;
/** Large enough for every message these tests send, unless a test is about the limit. */
const MAX_PAYLOAD = 16 * MiB;

// Helpers: the client's end.

interface Closed {
  code: number;
  reason: string;
}

/** A client stream, with everything it emitted recorded from the moment it was handed over. */
interface Client {
  socket: WsClient;
  texts: string[];
  binary: Buffer[];
  binaryBytes(): number;
  closed: Promise<Closed>;
}

/** Listens to `socket` at once (the same turn the promise resolved) and ends it after the test. */
function track(socket: WsClient): Client {
  const texts: string[] = [];
  const binary: Buffer[] = [];
  let bytes = 0;
  socket.on('text', (text) => texts.push(text));
  socket.on('binary', (data) => {
    binary.push(Buffer.from(data));
    bytes += data.length;
  });
  const closed = new Promise<Closed>((resolve) => socket.once('close', (code, reason) => resolve({ code, reason })));
  cleanups.push(async () => {
    if (socket.state !== 'closed') socket.terminate();
    await closed;
  });
  return { socket, texts, binary, binaryBytes: () => bytes, closed };
}

async function connectClient(url: string, options: Partial<WsClientOptions> = {}): Promise<Client> {
  return track(await connectWsClient(url, { maxPayload: MAX_PAYLOAD, ...options }));
}

/** What a connection attempt that should fail ended with. */
async function failedAttempt(url: string, options: Partial<WsClientOptions> = {}): Promise<Error> {
  const result = await within(
    connectWsClient(url, { maxPayload: MAX_PAYLOAD, ...options }).then(
      (socket) => {
        track(socket);
        return new Error('connected');
      },
      (err: Error) => err,
    ),
    10_000,
    'the connection attempt to end',
  );
  expect(result.message).not.toBe('connected');
  return result;
}

const closedWithin = (client: Client, what = 'the client stream to close'): Promise<Closed> => within(client.closed, 10_000, what);

/** `n` turns of the event loop: whatever sits in a socket's receive buffer has been read by then. */
async function turns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
}

// Helpers: servers.

/** Starts `server` on `host`:0 and closes it (and every connection it took) after the test. */
async function serve(server: NetServer | HttpServer, host = '127.0.0.1'): Promise<number> {
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, host, () => resolve()));
  cleanups.push(async () => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return (server.address() as AddressInfo).port;
}

/** A TCP server that hands each connection to `onConnection` (which may say nothing at all). */
async function rawServer(onConnection: (socket: Socket, request: Promise<string>) => void = () => {}): Promise<number> {
  const server = createNetServer((socket) => {
    socket.on('error', () => {});
    let text = '';
    const request = new Promise<string>((resolve) => {
      socket.on('data', (chunk: Buffer) => {
        text += chunk.toString('latin1');
        if (text.includes('\r\n\r\n')) resolve(text);
      });
    });
    onConnection(socket, request);
  });
  return serve(server);
}

/** The server's end of one connection to a ws server, recorded from its first moment. */
interface Peer {
  ws: WebSocket;
  req: IncomingMessage;
  messages: Array<{ data: Buffer; isBinary: boolean }>;
  /** The client's bytes exactly as they came off the wire, after the handshake. */
  wire: Buffer[];
  closed: Promise<Closed>;
}

interface WsServer {
  url: string;
  nextPeer(): Promise<Peer>;
}

async function startWsServer(options: { host?: string; ws?: ServerOptions } = {}): Promise<WsServer> {
  const http = createHttpServer((_req, res) => res.writeHead(426).end());
  const wss = new WebSocketServer({ ...options.ws, server: http });
  const peers: Peer[] = [];
  const waiting: Array<(peer: Peer) => void> = [];
  wss.on('connection', (ws, req) => {
    const wire: Buffer[] = [];
    req.socket.prependListener('data', (chunk: Buffer) => wire.push(Buffer.from(chunk)));
    const messages: Peer['messages'] = [];
    ws.on('message', (data, isBinary) => messages.push({ data: data as Buffer, isBinary }));
    ws.on('error', () => {});
    const closed = new Promise<Closed>((resolve) => ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })));
    const peer = { ws, req, messages, wire, closed };
    const waiter = waiting.shift();
    if (waiter) waiter(peer);
    else peers.push(peer);
  });
  const host = options.host ?? '127.0.0.1';
  const port = await serve(http, host);
  cleanups.push(() => {
    for (const ws of wss.clients) ws.terminate();
    wss.close();
  });
  return {
    url: `ws://${host}:${port}`,
    nextPeer: () =>
      within(peers.length ? Promise.resolve(peers.shift()!) : new Promise<Peer>((resolve) => waiting.push(resolve)), 10_000, 'a connection at the server'),
  };
}

/** A ws server with one client connected to it. */
async function connectPair(clientOptions: Partial<WsClientOptions> = {}, path = '/'): Promise<{ client: Client; peer: Peer; server: WsServer }> {
  const server = await startWsServer();
  const client = await connectClient(`${server.url}${path}`, clientOptions);
  return { client, peer: await server.nextPeer(), server };
}

/** A server that completes upgrades by hand (and then says whatever the test writes). */
async function startFakeServer(onUpgrade: (u: FakeUpgrade) => void = (u) => u.accept()): Promise<{ url: string; upgrades: FakeUpgrade[] }> {
  const fake = await startFakeWsServer(onUpgrade);
  cleanups.push(() => fake.close());
  return { url: `ws://127.0.0.1:${fake.port}/`, upgrades: fake.upgrades };
}

/** A client connected to a hand-made server, and the server's end of it. */
async function connectFake(clientOptions: Partial<WsClientOptions> = {}): Promise<{ client: Client; upgrade: FakeUpgrade }> {
  const fake = await startFakeServer();
  const client = await connectClient(fake.url, clientOptions);
  const upgrade = await waitFor(() => fake.upgrades[0], 'the upgrade at the fake server');
  upgrade.socket.setNoDelay(true);
  return { client, upgrade };
}

/** A frame as a server sends it (unmasked). */
const serverFrame = (opcode: number, payload: Buffer | string = Buffer.alloc(0), fin = true): Buffer =>
  encodeFrame({ opcode, payload: typeof payload === 'string' ? Buffer.from(payload) : payload, masked: false, fin });

const closeFramesOf = (frames: Frame[]): Frame[] => frames.filter((f) => f.opcode === OPCODE.close);

/** The client's close frame, once the server has it. */
const clientCloseFrame = (upgrade: FakeUpgrade): Promise<Frame> =>
  waitFor(() => upgrade.frames.find((f) => f.opcode === OPCODE.close), "the client's close frame");

const sendFrom = (ws: WebSocket, data: Buffer | string, options: { binary?: boolean; fin?: boolean } = {}): Promise<void> =>
  new Promise((resolve, reject) => ws.send(data, options, (err) => (err ? reject(err) : resolve())));

const sendTo = (socket: WsClient, data: Buffer | string): Promise<void> =>
  new Promise((resolve, reject) => socket.send(data, (err) => (err ? reject(err) : resolve())));

/** A frame as it went over the wire: its header fields and its payload still masked. */
interface WireFrame {
  opcode: number;
  maskBit: boolean;
  key: Buffer;
  length: number;
  wirePayload: Buffer;
}

/** Parses a client's frames out of the bytes it wrote, without unmasking them. */
function wireFrames(bytes: Buffer): WireFrame[] {
  const frames: WireFrame[] = [];
  let at = 0;
  while (at + 2 <= bytes.length) {
    const maskBit = (bytes[at + 1]! & 0x80) !== 0;
    let length = bytes[at + 1]! & 0x7f;
    let head = 2;
    if (length === 126) {
      length = bytes.readUInt16BE(at + 2);
      head = 4;
    } else if (length === 127) {
      length = Number(bytes.readBigUInt64BE(at + 2));
      head = 10;
    }
    const key = maskBit ? bytes.subarray(at + head, at + head + 4) : Buffer.alloc(0);
    const start = at + head + key.length;
    frames.push({ opcode: bytes[at]! & 0x0f, maskBit, key, length, wirePayload: bytes.subarray(start, start + length) });
    at = start + length;
  }
  return frames;
}

/** The first IPv4 address of this machine that is not loopback: reaching it needs no network. */
const nonLoopbackAddress = Object.values(networkInterfaces())
  .flat()
  .find((a) => a && a.family === 'IPv4' && !a.internal)?.address;

/**
 * A port on 127.0.0.1 where a connection attempt hangs in the TCP handshake itself: a child
 * process listens with a backlog of 1 and never accepts (its only thread is blocked), and two
 * connections fill its accept queue, so the kernel drops the next SYN.
 */
async function portThatNeverCompletesConnect(): Promise<number> {
  const script = `
    const net = require('node:net');
    const server = net.createServer();
    server.listen({ port: 0, host: '127.0.0.1', backlog: 1 }, () => {
      require('node:fs').writeSync(1, server.address().port + '\\n');
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
    });`;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = once(child, 'exit');
  cleanups.push(async () => {
    child.kill('SIGKILL');
    await exited;
  });
  const [chunk] = (await within(once(child.stdout, 'data'), 10_000, 'the listener to print its port')) as [Buffer];
  const port = Number(chunk.toString().trim());
  for (let i = 0; i < 2; i++) {
    const filler = netConnect(port, '127.0.0.1');
    filler.on('error', () => {});
    cleanups.push(() => void filler.destroy());
    await within(once(filler, 'connect'), 10_000, 'a connection into the accept queue');
  }
  return port;
}

// The tests.

describe('opening handshake', () => {
  it('connects, asking for the path, the subprotocol and the extra headers', async () => {
    const server = await startWsServer();
    const client = await connectClient(`${server.url}/v1/stream?session=abc`, {
      protocol: 'tether.stream.v1',
      headers: { authorization: 'Bearer t0ken', 'x-stream-id': 's-42' },
    });
    const peer = await server.nextPeer();
    expect(client.socket.state).toBe('open');
    expect(peer.req.url).toBe('/v1/stream?session=abc');
    expect(peer.req.headers['sec-websocket-protocol']).toBe('tether.stream.v1');
    expect(peer.req.headers.authorization).toBe('Bearer t0ken');
    expect(peer.req.headers['x-stream-id']).toBe('s-42');
    expect(peer.ws.protocol).toBe('tether.stream.v1');
  });

  it('rejects a server that does not choose the subprotocol it was offered', async () => {
    const server = await startWsServer({ ws: { handleProtocols: () => false } });
    const err = await failedAttempt(server.url, { protocol: 'tether.stream.v1' });
    expect(err).toBeInstanceOf(HandshakeError);
    expect(err).toMatchObject({ message: 'Server sent no subprotocol or another one', status: 101 });
    // The server did upgrade; the client hung up on it without a close frame.
    expect((await within((await server.nextPeer()).closed, 10_000, 'the server to see the hang-up')).code).toBe(1006);
  });

  it('rejects a 401 answer with a HandshakeError carrying the status', async () => {
    const http = createHttpServer((_req, res) => res.writeHead(500).end());
    http.on('upgrade', (_req: IncomingMessage, socket: Socket) => {
      socket.end('HTTP/1.1 401 Unauthorized\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
    });
    const port = await serve(http);
    const err = await failedAttempt(`ws://127.0.0.1:${port}/`);
    expect(err).toBeInstanceOf(HandshakeError);
    expect(err.message).toBe('Unexpected server response: 401');
    expect((err as HandshakeError).status).toBe(401);
  });

  it('rejects with the socket error itself when the port refuses', async () => {
    const probe = createNetServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', () => resolve()));
    const { port } = probe.address() as AddressInfo;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const err = await failedAttempt(`ws://127.0.0.1:${port}/`);
    expect(err).not.toBeInstanceOf(HandshakeError);
    expect(err).toMatchObject({ code: 'ECONNREFUSED' });
  });

  it.each([
    [
      'a wrong Sec-WebSocket-Accept',
      (key: string) => `Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${acceptKey(`${key}x`)}`,
      'Invalid Sec-WebSocket-Accept header',
    ],
    ['no Upgrade: websocket', (key: string) => `Upgrade: h2c\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${acceptKey(key)}`, 'Invalid Upgrade header'],
  ])('rejects a 101 with %s, and hangs up', async (_what, headers, message) => {
    let serverSocket: Socket | undefined;
    const port = await rawServer((socket, request) => {
      serverSocket = socket;
      void request.then((text) => {
        const key = /sec-websocket-key: *(\S+)/i.exec(text)?.[1] ?? '';
        socket.write(`HTTP/1.1 101 Switching Protocols\r\n${headers(key)}\r\n\r\n`);
      });
    });
    const err = await failedAttempt(`ws://127.0.0.1:${port}/`);
    expect(err).toBeInstanceOf(HandshakeError);
    expect(err).toMatchObject({ message, status: 101 });
    await waitFor(() => serverSocket?.destroyed || serverSocket?.readableEnded, 'the client to hang up');
  });

  it('rejects once handshakeTimeoutMs passes without an answer, and hangs up', async () => {
    let serverSocket: Socket | undefined;
    const port = await rawServer((socket) => (serverSocket = socket)); // reads the request, never answers
    const started = Date.now();
    const err = await failedAttempt(`ws://127.0.0.1:${port}/`, { handshakeTimeoutMs: 150 });
    expect(err).toBeInstanceOf(HandshakeError);
    expect(err.message).toBe('Opening handshake has timed out');
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
    await waitFor(() => serverSocket?.readableEnded, 'the client to hang up');
  });

  // A connect that hangs (SYNs dropped: a firewall, a full accept queue) counts against the
  // handshake's time too (ClientRequest#setTimeout would start only once TCP has connected).
  it('bounds a TCP connect that never completes by handshakeTimeoutMs too', async () => {
    const port = await portThatNeverCompletesConnect();
    const dialing = new AbortController();
    cleanups.push(() => dialing.abort());
    const attempt = connectWsClient(`ws://127.0.0.1:${port}/`, { maxPayload: MAX_PAYLOAD, handshakeTimeoutMs: 200, signal: dialing.signal });
    const outcome = attempt.then(
      (socket) => {
        track(socket);
        return 'connected';
      },
      (err: Error) => err.message,
    );
    expect(await within(outcome, 3_000, 'the connection attempt to end')).toBe('Opening handshake has timed out');
  });

  it('rejects at once when the signal is already aborted, without dialling', async () => {
    let connections = 0;
    const port = await rawServer(() => connections++);
    const err = await failedAttempt(`ws://127.0.0.1:${port}/`, { signal: AbortSignal.abort() });
    expect(err).toBeInstanceOf(HandshakeError);
    expect(err.message).toBe('the connection attempt was given up');
    // A later attempt is the first connection the server sees.
    const later = new AbortController();
    const attempt = connectWsClient(`ws://127.0.0.1:${port}/`, { maxPayload: MAX_PAYLOAD, signal: later.signal }).catch((e: Error) => e);
    await waitFor(() => connections > 0, 'the later attempt to connect');
    later.abort();
    await attempt;
    expect(connections).toBe(1);
  });

  it('rejects when the signal is aborted while the server has not answered, and hangs up', async () => {
    let serverSocket: Socket | undefined;
    const port = await rawServer((socket) => (serverSocket = socket));
    const dialing = new AbortController();
    const attempt = failedAttempt(`ws://127.0.0.1:${port}/`, { signal: dialing.signal });
    await waitFor(() => serverSocket, 'the attempt to reach the server');
    dialing.abort();
    const err = await attempt;
    expect(err).toBeInstanceOf(HandshakeError);
    expect(err.message).toBe('the connection attempt was given up');
    await waitFor(() => serverSocket?.readableEnded, 'the client to hang up');
  });

  it('ignores an abort once the connection is open', async () => {
    const dialing = new AbortController();
    const { client, peer } = await connectPair({ signal: dialing.signal });
    dialing.abort();
    await sendTo(client.socket, 'still here');
    await waitFor(() => peer.messages[0], 'the message at the server');
    expect(client.socket.state).toBe('open');
    expect(peer.messages[0]!.data.toString()).toBe('still here');
  });
});

describe('text messages', () => {
  it('hands on a text message from the server whole', async () => {
    const { client, peer } = await connectPair();
    peer.ws.send('{"id":1,"ok":true}');
    await waitFor(() => client.texts.length === 1, 'the text');
    expect(client.texts).toEqual(['{"id":1,"ok":true}']);
    expect(client.binary).toEqual([]);
  });

  it('hands on a message the server sends in fragments as one text', async () => {
    const { client, peer } = await connectPair();
    await sendFrom(peer.ws, 'hel', { fin: false });
    await sendFrom(peer.ws, 'lo, ', { fin: false });
    await sendFrom(peer.ws, 'world', { fin: true });
    peer.ws.send('next');
    await waitFor(() => client.texts.length === 2, 'both texts');
    expect(client.texts).toEqual(['hello, world', 'next']);
  });

  it('decodes multi-byte UTF-8, also when a character is split between fragments', async () => {
    const { client, peer } = await connectPair();
    const text = 'héllo wörld — 日本語 🚀';
    peer.ws.send(text);
    const euro = Buffer.from('€'); // three bytes: sent as two, then one
    await sendFrom(peer.ws, euro.subarray(0, 2), { binary: false, fin: false });
    await sendFrom(peer.ws, euro.subarray(2), { binary: false, fin: true });
    await waitFor(() => client.texts.length === 2, 'both texts');
    expect(client.texts).toEqual([text, '€']);
  });

  it('hands on a text whose frame arrives one byte per read', async () => {
    const { client, upgrade } = await connectFake();
    const text = `{"big":"${'ü'.repeat(200)}"}`;
    const frame = serverFrame(OPCODE.text, text);
    for (const byte of frame) {
      upgrade.socket.write(Buffer.from([byte]));
      await turns(1);
    }
    await waitFor(() => client.texts.length === 1, 'the text');
    expect(client.texts).toEqual([text]);
  });

  it('hands on an empty text message as an empty string', async () => {
    const { client, peer } = await connectPair();
    peer.ws.send('');
    peer.ws.send('after');
    await waitFor(() => client.texts.length === 2, 'both texts');
    expect(client.texts).toEqual(['', 'after']);
  });

  it('sends a string as a text message', async () => {
    const { client, peer } = await connectPair();
    await sendTo(client.socket, '{"op":"ping"} — ✓');
    await waitFor(() => peer.messages[0], 'the message at the server');
    expect(peer.messages[0]!.isBinary).toBe(false);
    expect(peer.messages[0]!.data.toString('utf8')).toBe('{"op":"ping"} — ✓');
  });
});

describe('binary messages', () => {
  it.each([
    ['a small one', 100],
    ['1 MiB, above the size where header and payload are merged', MiB],
  ])('sends a Buffer as a binary message, byte-exact: %s', async (_what, size) => {
    const { client, peer } = await connectPair();
    const data = randomBytes(size);
    const copy = Buffer.from(data);
    await sendTo(client.socket, data);
    expect(client.socket.bufferedAmount).toBe(0);
    await waitFor(() => peer.messages[0], 'the message at the server');
    expect(peer.messages).toHaveLength(1);
    expect(peer.messages[0]!.isBinary).toBe(true);
    expect(peer.messages[0]!.data.equals(data)).toBe(true);
    expect(data.equals(copy)).toBe(true); // the caller's buffer is left alone
  });

  it('hands on 3 MiB of server messages as slices whose concatenation is what was sent', async () => {
    const { client, peer } = await connectPair();
    const data = randomBytes(3 * MiB);
    const cuts = [0, 1, 700_000, 700_000 + MiB, 2 * MiB + 65_535, 3 * MiB];
    for (let i = 1; i < cuts.length; i++) peer.ws.send(data.subarray(cuts[i - 1], cuts[i]));
    await waitFor(() => client.binaryBytes() === data.length, 'all the bytes');
    expect(Buffer.concat(client.binary).equals(data)).toBe(true);
    expect(client.binary.length).toBeGreaterThanOrEqual(cuts.length - 1);
    expect(client.texts).toEqual([]);
  });

  it('keeps text and binary in the order the server sent them', async () => {
    const { client, peer } = await connectPair();
    const events: string[] = [];
    client.socket.on('text', (t) => events.push(`text ${t}`));
    client.socket.on('binary', (b) => events.push(`binary ${b.toString()}`));
    peer.ws.send(Buffer.from('a'));
    peer.ws.send('mid');
    peer.ws.send(Buffer.from('b'));
    await waitFor(() => events.length === 3, 'three events');
    expect(events).toEqual(['binary a', 'text mid', 'binary b']);
  });
});

describe('masking', () => {
  it('puts the mask bit and an all-zero key on every frame to 127.0.0.1', async () => {
    const { client, peer } = await connectPair();
    const big = randomBytes(MiB);
    await sendTo(client.socket, 'hello');
    await sendTo(client.socket, Buffer.from([1, 2, 3]));
    await sendTo(client.socket, big);
    await waitFor(() => peer.messages.length === 3, 'three messages at the server');
    const frames = wireFrames(Buffer.concat(peer.wire));
    expect(frames.map((f) => [f.opcode, f.length])).toEqual([
      [OPCODE.text, 5],
      [OPCODE.binary, 3],
      [OPCODE.binary, MiB],
    ]);
    for (const f of frames) {
      expect(f.maskBit).toBe(true);
      expect(f.key).toEqual(Buffer.alloc(4));
    }
    // XOR with zeros: the payload crosses the wire as it is.
    expect(frames[0]!.wirePayload.toString()).toBe('hello');
    expect(frames[2]!.wirePayload.equals(big)).toBe(true);
  });

  it.skipIf(!nonLoopbackAddress)('masks with a fresh random key per frame to a non-loopback address of this machine', async () => {
    const server = await startWsServer({ host: nonLoopbackAddress! });
    const client = await connectClient(`${server.url}/`);
    const peer = await server.nextPeer();
    const payload = Buffer.alloc(64, 0x61);
    await sendTo(client.socket, payload);
    await sendTo(client.socket, payload);
    await sendTo(client.socket, 'text too');
    await waitFor(() => peer.messages.length === 3, 'three messages at the server');
    expect(peer.messages.map((m) => m.data.toString())).toEqual(['a'.repeat(64), 'a'.repeat(64), 'text too']);
    const frames = wireFrames(Buffer.concat(peer.wire));
    expect(frames).toHaveLength(3);
    for (const f of frames) {
      expect(f.maskBit).toBe(true);
      expect(f.key.equals(Buffer.alloc(4))).toBe(false);
    }
    expect(frames[0]!.key.equals(frames[1]!.key)).toBe(false);
    expect(frames[0]!.wirePayload.equals(payload)).toBe(false);
  });

  // ws-mask.test.ts covers the URL forms through maskingFor; these are host spellings that the
  // URL parser rewrites before zeroMaskFor looks at them.
  it('zeroMaskFor judges the host as the URL parser normalised it', () => {
    expect(zeroMaskFor('ws://127.1:9/x')).toBe(true); // 127.0.0.1
    expect(zeroMaskFor('ws://0x7f000001/x')).toBe(true); // 127.0.0.1
    expect(zeroMaskFor('ws://LOCALHOST:9/x')).toBe(true);
    expect(zeroMaskFor('wss://10.0.0.1/x')).toBe(true); // TLS, whatever the host
    expect(zeroMaskFor('ws://[::ffff:127.0.0.1]/x')).toBe(false); // mapped loopback: random masks, the safe side
    if (nonLoopbackAddress) expect(zeroMaskFor(`ws://${nonLoopbackAddress}/`)).toBe(false);
  });
});

describe('control frames', () => {
  it('answers a ping with a pong carrying the same payload', async () => {
    const { peer } = await connectPair();
    const payload = randomBytes(125);
    const pong = once(peer.ws, 'pong');
    peer.ws.ping(payload);
    const [data] = (await within(pong, 10_000, 'the pong')) as [Buffer];
    expect(data.equals(payload)).toBe(true);
  });

  it('answers a ping that comes between the fragments of a text, and still hands the text on whole', async () => {
    const { client, upgrade } = await connectFake();
    upgrade.socket.write(Buffer.concat([serverFrame(OPCODE.text, 'frag', false), serverFrame(OPCODE.ping, 'p1'), serverFrame(OPCODE.continuation, 'ment')]));
    await waitFor(() => client.texts.length === 1, 'the text');
    const pong = await waitFor(() => upgrade.frames.find((f) => f.opcode === OPCODE.pong), 'the pong');
    expect(client.texts).toEqual(['fragment']);
    expect(pong.payload.toString()).toBe('p1');
    expect(pong.masked).toBe(true);
  });
});

describe('closing', () => {
  it('client close: the server sees the code and reason, and the client closes with the echoed code', async () => {
    const { client, peer } = await connectPair();
    client.socket.close(4000, 'bye');
    expect(client.socket.state).toBe('closing');
    expect(await within(peer.closed, 10_000, 'the server to close')).toEqual({ code: 4000, reason: 'bye' });
    const closed = await closedWithin(client);
    expect(closed.code).toBe(4000);
    expect(client.socket.state).toBe('closed');
  });

  it('server close: the client gets its code and reason, and echoes the code', async () => {
    const { client, peer } = await connectPair();
    peer.ws.close(4001, 'reason');
    expect(await closedWithin(client)).toEqual({ code: 4001, reason: 'reason' });
    expect((await within(peer.closed, 10_000, 'the server to close')).code).toBe(4001);
  });

  it('server terminate: the client closes with 1006', async () => {
    const { client, peer } = await connectPair();
    peer.ws.terminate();
    expect(await closedWithin(client)).toEqual({ code: 1006, reason: '' });
    expect(client.socket.state).toBe('closed');
  });

  it('client terminate: the client closes with 1006 and the server sees the connection cut', async () => {
    const { client, peer } = await connectPair();
    client.socket.terminate();
    expect((await closedWithin(client)).code).toBe(1006);
    expect((await within(peer.closed, 10_000, 'the server to close')).code).toBe(1006);
  });

  it('cuts a reason too long for a close frame between characters instead of throwing', async () => {
    const { client, peer } = await connectPair();
    const reason = '€'.repeat(100); // 300 bytes
    expect(() => client.socket.close(4000, reason)).not.toThrow();
    const seen = await within(peer.closed, 10_000, 'the server to close');
    expect(seen).toEqual({ code: 4000, reason: '€'.repeat(41) }); // 123 bytes, the most that fits
    expect((await closedWithin(client)).code).toBe(4000);
  });

  it('calls a send after close back with an error, while closing and once closed', async () => {
    const { client, peer } = await connectPair();
    client.socket.close(1000, '');
    await expect(sendTo(client.socket, 'late')).rejects.toThrow('the stream is not open');
    await closedWithin(client);
    await expect(sendTo(client.socket, Buffer.from('later'))).rejects.toThrow('the stream is not open');
    await within(peer.closed, 10_000, 'the server to close');
    expect(peer.messages).toEqual([]);
  });

  it('sends one close frame however often close is called', async () => {
    const { client, upgrade } = await connectFake();
    client.socket.close(4000, 'first');
    client.socket.close(4001, 'second');
    const frame = await clientCloseFrame(upgrade);
    upgrade.socket.end(serverFrame(OPCODE.close, closePayload(4000)));
    expect((await closedWithin(client)).code).toBe(4000);
    client.socket.close(4002, 'third');
    expect(closeFramesOf(upgrade.frames)).toHaveLength(1);
    expect(closeCodeOf(frame)).toBe(4000);
    expect(frame.payload.subarray(2).toString()).toBe('first');
  });

  it('cuts the connection when the peer never answers its close within graceMs', async () => {
    const { client, upgrade } = await connectFake();
    client.socket.close(4000, 'bye', 100);
    expect(closeCodeOf(await clientCloseFrame(upgrade))).toBe(4000);
    expect(await closedWithin(client)).toEqual({ code: 1006, reason: '' });
    await waitFor(() => upgrade.socket.destroyed || upgrade.socket.readableEnded, 'the connection to be cut');
  });

  it("reads the peer's close answer even when paused", async () => {
    const { client, peer } = await connectPair();
    client.socket.pause();
    client.socket.close(4000, 'paused');
    expect(client.socket.isPaused).toBe(false);
    expect((await closedWithin(client)).code).toBe(4000);
    expect((await within(peer.closed, 10_000, 'the server to close')).code).toBe(4000);
  });
});

describe('protocol errors', () => {
  /** Connects to a hand-made server, which then writes `bytes` in one write; resolves once the client closed. */
  async function afterServerWrites(bytes: Buffer, maxPayload = 1024) {
    const { client, upgrade } = await connectFake({ maxPayload });
    upgrade.socket.write(bytes);
    const closed = await closedWithin(client);
    const sent = await clientCloseFrame(upgrade);
    return { client, upgrade, closed, sentCode: closeCodeOf(sent) };
  }

  it('fails with 1002 on a masked frame from the server, and reads nothing after it', async () => {
    const masked = encodeFrame({ opcode: OPCODE.text, payload: Buffer.from('masked'), masked: true });
    const { client, upgrade, closed, sentCode } = await afterServerWrites(
      Buffer.concat([masked, serverFrame(OPCODE.text, 'after'), serverFrame(OPCODE.ping, 'p')]),
    );
    expect(sentCode).toBe(1002);
    expect(closed.code).toBe(1002);
    expect(client.texts).toEqual([]);
    expect(upgrade.frames.map((f) => f.opcode)).toEqual([OPCODE.close]);
  });

  it('fails with 1009 on a text over maxPayload', async () => {
    const { client, closed, sentCode } = await afterServerWrites(serverFrame(OPCODE.text, 'x'.repeat(101)), 100);
    expect(sentCode).toBe(1009);
    expect(closed.code).toBe(1009);
    expect(client.texts).toEqual([]);
  });

  it('fails with 1009 on a fragmented text whose fragments together pass maxPayload', async () => {
    const { client, sentCode } = await afterServerWrites(
      Buffer.concat([serverFrame(OPCODE.text, 'x'.repeat(60), false), serverFrame(OPCODE.continuation, 'y'.repeat(60))]),
      100,
    );
    expect(sentCode).toBe(1009);
    expect(client.texts).toEqual([]);
  });

  it('accepts a text of exactly maxPayload bytes', async () => {
    const { client, upgrade } = await connectFake({ maxPayload: 100 });
    upgrade.socket.write(serverFrame(OPCODE.text, 'x'.repeat(100)));
    await waitFor(() => client.texts.length === 1, 'the text');
    expect(client.socket.state).toBe('open');
  });

  it.each(INVALID_UTF8.map((bytes) => [bytes.toString('hex'), bytes]))('fails with 1007 on a text that is not UTF-8 (%s)', async (_hex, bytes) => {
    const { client, closed, sentCode } = await afterServerWrites(serverFrame(OPCODE.text, Buffer.concat([Buffer.from('ok '), bytes])));
    expect(sentCode).toBe(1007);
    expect(closed.code).toBe(1007);
    expect(client.texts).toEqual([]);
  });

  // A text that is not UTF-8 is found at the end of its message, in the middle of a chunk: the
  // rest of that chunk is not read either (RFC 6455 §7.1.7: no further data is processed).
  it('reads nothing that came after a text that is not UTF-8', async () => {
    const { client, sentCode } = await afterServerWrites(Buffer.concat([serverFrame(OPCODE.text, Buffer.from([0xff])), serverFrame(OPCODE.text, 'after')]));
    expect(sentCode).toBe(1007);
    expect(client.texts).toEqual([]);
  });

  it('fails with 1002 on a close code no peer may send', async () => {
    const { closed, sentCode } = await afterServerWrites(serverFrame(OPCODE.close, closePayload(1006)));
    expect(sentCode).toBe(1002);
    expect(closed.code).toBe(1002);
  });

  it('fails with 1007 on a close reason that is not UTF-8', async () => {
    const { closed, sentCode } = await afterServerWrites(serverFrame(OPCODE.close, Buffer.concat([closePayload(1000), Buffer.from([0xc0, 0x80])])));
    expect(sentCode).toBe(1007);
    expect(closed.code).toBe(1007);
  });
});

describe('pause and resume', () => {
  it('pause stops binary events while the server goes on sending; resume delivers the rest, nothing lost', async () => {
    const { client, peer } = await connectPair();
    const first = randomBytes(16 * 1024);
    await sendFrom(peer.ws, first);
    await waitFor(() => client.binaryBytes() === first.length, 'the first message');
    client.socket.pause();
    await turns(1);
    const eventsAtPause = client.binary.length;
    const rest = Array.from({ length: 8 }, () => randomBytes(8 * 1024));
    await Promise.all(rest.map((m) => sendFrom(peer.ws, m))); // all of it handed to the kernel
    await turns(10);
    expect(client.socket.isPaused).toBe(true);
    expect(client.binary.length).toBe(eventsAtPause);
    expect(client.binaryBytes()).toBe(first.length);
    client.socket.resume();
    expect(client.socket.isPaused).toBe(false);
    const all = Buffer.concat([first, ...rest]);
    await waitFor(() => client.binaryBytes() === all.length, 'the rest after resume');
    expect(Buffer.concat(client.binary).equals(all)).toBe(true);
  });

  it('pause right after connecting holds even the frames that came with the 101', async () => {
    const data = randomBytes(1000);
    const fake = await startFakeServer((u) => u.accept(undefined, Buffer.concat([serverFrame(OPCODE.text, 'early'), serverFrame(OPCODE.binary, data)])));
    const client = await connectClient(fake.url);
    client.socket.pause();
    await turns(10);
    expect(client.texts).toEqual([]);
    expect(client.binary).toEqual([]);
    client.socket.resume();
    await waitFor(() => client.binaryBytes() === data.length, 'the frames after resume');
    expect(client.texts).toEqual(['early']);
    expect(Buffer.concat(client.binary).equals(data)).toBe(true);
  });
});

describe('bytes in the same packet as the 101', () => {
  it('hands on frames written in the same write as the 101 response', async () => {
    const data = randomBytes(300);
    const fake = await startFakeServer((u) =>
      u.accept(undefined, Buffer.concat([serverFrame(OPCODE.text, 'hello'), serverFrame(OPCODE.binary, data), serverFrame(OPCODE.text, 'bye')])),
    );
    const client = await connectClient(fake.url); // listeners attached right after the await
    await waitFor(() => client.texts.length === 2, 'both texts');
    expect(client.texts).toEqual(['hello', 'bye']);
    expect(Buffer.concat(client.binary).equals(data)).toBe(true);
  });

  it('answers a ping and honours a close that came with the 101', async () => {
    const fake = await startFakeServer((u) =>
      u.accept(undefined, Buffer.concat([serverFrame(OPCODE.ping, 'early'), serverFrame(OPCODE.close, closePayload(4003, 'go'))])),
    );
    const client = await connectClient(fake.url);
    expect(await closedWithin(client)).toEqual({ code: 4003, reason: 'go' });
    const upgrade = fake.upgrades[0]!;
    expect(upgrade.frames.map((f) => f.opcode)).toEqual([OPCODE.pong, OPCODE.close]);
    expect(upgrade.frames[0]!.payload.toString()).toBe('early');
    expect(closeCodeOf(upgrade.frames[1]!)).toBe(4003);
  });
});
