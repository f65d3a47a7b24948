/**
 * Session streams (relay/streams.ts) on a real HTTP server on port 0, with real WebSocket clients
 * for the client and the device: who is admitted, how the device is asked to dial and proven,
 * the splice of the two with its byte counts and recording, and every way a stream ends with the
 * close code docs/session-streams.md promises. The credentials checks and the agent messages are
 * the ports the relay is built with, here answered from the test's own records.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { createStreams, type StreamDeps } from '../../../relay/streams';
import { AGENT_HEADERS, AGENT_STREAM_PATH, type RelayToAgentMessage } from '../../../shared/protocol/control-channel';
import { silentLogger } from '../../../shared/log';
import { STREAM_CLOSE, STREAM_PATH, type StreamGrant } from '../../../shared/protocol/session-stream';
import { AGENT_SUBPROTOCOL } from '../../../shared/version';
import { waitFor } from '../../helpers/wait';

type StreamOpen = Extract<RelayToAgentMessage, { type: 'stream.open' }>;
type Streams = ReturnType<typeof createStreams>;

const FUTURE = new Date(Date.now() + 3_600_000).toISOString();
const GRANTS: Record<string, StreamGrant> = {
  'sess-1': { sessionId: 'sess-1', deviceId: 'dev-1', protocol: 'shell', expiresAt: FUTURE },
  'sess-2': { sessionId: 'sess-2', deviceId: 'dev-2', protocol: 'port-forward', expiresAt: FUTURE, targets: ['127.0.0.1:5432'] },
  'sess-tok': { sessionId: 'sess-tok', deviceId: 'dev-1', protocol: 'diagnostics', expiresAt: FUTURE, tokenId: 'tok_1', tokenExpiresAt: FUTURE },
};
/** The proof an agent shows for a stream (the real one is an HMAC: shared/auth/agent-proofs.ts). */
const proofFor = (deviceId: string, streamId: string) => `${deviceId}:${streamId}`;

interface Fixture {
  streams: Streams;
  url: string;
  /** `stream.open` messages the relay sent to agents connected here. */
  opens: StreamOpen[];
  /** Calls of `routeStream` (the agent is on another node). */
  routed: StreamOpen[];
  bytes: Map<string, { toDevice: number; fromDevice: number }>;
  clients: string[];
  recorded: Array<{ grant: StreamGrant; fromClient: string[]; fromDevice: string[]; ended: boolean }>;
}

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

async function start(over: Partial<StreamDeps> & { agentHere?: boolean; grants?: Record<string, StreamGrant> } = {}): Promise<Fixture> {
  const grants = over.grants ?? GRANTS;
  const f: Omit<Fixture, 'streams' | 'url'> = { opens: [], routed: [], bytes: new Map(), clients: [], recorded: [] };
  const streams = createStreams({
    log: silentLogger,
    authorize(sessionId, credentials) {
      if (sessionId === 'unreachable') throw new Error('the cluster bus is away');
      const grant = grants[sessionId];
      if (!grant) return { ok: false, code: STREAM_CLOSE.unknownSession, reason: 'no such session' };
      const ok = credentials.ticket === `ticket-${sessionId}` || (grant.tokenId !== undefined && credentials.bearer === `bearer-${grant.tokenId}`);
      return ok ? { ok: true, grant } : { ok: false, code: STREAM_CLOSE.noCredentials, reason: 'wrong ticket' };
    },
    authenticateAgent: (deviceId, credential) => 'streamId' in credential && credential.proof === proofFor(deviceId, credential.streamId),
    sendToAgent: (_deviceId, msg) => (over.agentHere === false ? false : (f.opens.push(msg), true)),
    recordBytes(counts) {
      for (const [id, c] of counts) {
        const sum = f.bytes.get(id) ?? { toDevice: 0, fromDevice: 0 };
        f.bytes.set(id, { toDevice: sum.toDevice + c.toDevice, fromDevice: sum.fromDevice + c.fromDevice });
      }
    },
    onBytes: () => {},
    publicUrl: 'http://127.0.0.1:8080',
    streamClients: { attached: (id) => void f.clients.push(`attached ${id}`), detached: (id) => void f.clients.push(`detached ${id}`) },
    recordings: {
      start(grant) {
        if (grant.protocol !== 'shell') return undefined;
        const r = { grant, fromClient: [] as string[], fromDevice: [] as string[], ended: false };
        f.recorded.push(r);
        const tap = (into: string[]) => ({ frame() {}, payload: (slice: Buffer) => void into.push(slice.toString()) });
        return { fromClient: tap(r.fromClient), fromDevice: tap(r.fromDevice), end: () => void (r.ended = true) };
      },
    },
    ...over,
  });
  const server: Server = createServer();
  server.on('upgrade', (req, socket, head) => {
    const path = (req.url ?? '').split('?')[0]!;
    const session = STREAM_PATH.exec(path);
    const handled = session
      ? streams.handleClientUpgrade(req, socket, head, session[1]!)
      : path === AGENT_STREAM_PATH
        ? streams.handleAgentUpgrade(req, socket, head)
        : undefined;
    if (!handled) socket.destroy();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  cleanups.push(async () => {
    await streams.close();
    await new Promise<void>((r) => server.close(() => r()));
  });
  return { ...f, streams, url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

/** A WebSocket and what happened to it: the HTTP status of a refused upgrade, the close, the messages. */
function socket(url: string, options: WebSocket.ClientOptions = {}, protocols?: string) {
  const ws = protocols ? new WebSocket(url, protocols, options) : new WebSocket(url, options);
  const messages: string[] = [];
  ws.on('message', (data) => messages.push(data.toString()));
  const opened = new Promise<void>((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('unexpected-response', (_req, res) => reject(Object.assign(new Error(`HTTP ${res.statusCode}`), { status: res.statusCode })));
    ws.once('error', reject);
  });
  opened.catch(() => {});
  const closed = new Promise<{ code: number; reason: string }>((resolve) => ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  cleanups.push(() => ws.terminate());
  return {
    ws,
    messages,
    opened,
    closed,
    status: () =>
      opened.then(
        () => 101,
        (err: { status?: number }) => err.status,
      ),
  };
}

const client = (f: Fixture, sessionId: string, options: { ticket?: string; origin?: string; bearer?: string } = {}) => {
  const query = options.bearer ? '' : `?ticket=${options.ticket ?? `ticket-${sessionId}`}`;
  return socket(`${f.url}/v1/remote-access/sessions/${sessionId}/stream${query}`, {
    headers: { ...(options.origin && { origin: options.origin }), ...(options.bearer && { authorization: `Bearer ${options.bearer}` }) },
  });
};

/** The device's data stream for `open`, with the proof of `deviceId` (its own unless told otherwise). */
const device = (f: Fixture, open: StreamOpen, deviceId: string, over: { streamId?: string; proof?: string } = {}) => {
  const streamId = over.streamId ?? open.stream_id;
  return socket(
    `${f.url}${AGENT_STREAM_PATH}`,
    {
      headers: {
        [AGENT_HEADERS.deviceId]: deviceId,
        [AGENT_HEADERS.streamId]: streamId,
        [AGENT_HEADERS.streamProof]: over.proof ?? proofFor(deviceId, streamId),
      },
    },
    AGENT_SUBPROTOCOL,
  );
};

/** A client admitted to `sessionId` and its device joined: a running stream. */
async function spliced(f: Fixture, sessionId: string, options: { bearer?: string } = {}) {
  const c = client(f, sessionId, options);
  await c.opened;
  const open = await waitFor(() => f.opens.find((o) => o.session_id === sessionId), 'stream.open');
  const d = device(f, open, GRANTS[sessionId]!.deviceId);
  await d.opened;
  return { c, d, open };
}

describe('admitting a client', () => {
  it("refuses a page of another origin (403); takes the public URL's origin, another loopback name of it, and a client that sends none", async () => {
    const f = await start();
    expect(await client(f, 'sess-1', { origin: 'http://evil.example' }).status()).toBe(403);
    expect(await client(f, 'sess-1', { origin: 'http://127.0.0.1:8081' }).status()).toBe(403); // another port is another origin
    expect(f.opens).toEqual([]);
    expect(await client(f, 'sess-1', { origin: 'http://localhost:8080' }).status()).toBe(101);
    expect(await client(f, 'sess-2').status()).toBe(101);
    expect(f.clients).toEqual(['attached sess-1', 'attached sess-2']);
  });

  it('answers 503 when the credentials cannot be checked now, and closes with the refusal when they are refused', async () => {
    const f = await start();
    expect(await client(f, 'unreachable').status()).toBe(503);
    const wrong = client(f, 'sess-1', { ticket: 'stolen' });
    expect(await wrong.closed).toEqual({ code: STREAM_CLOSE.noCredentials, reason: 'wrong ticket' });
    expect(await client(f, 'nope').closed).toMatchObject({ code: STREAM_CLOSE.unknownSession });
    expect(f.opens).toEqual([]);
    expect(f.clients).toEqual([]);
  });

  it('admits one client per session: a second is told the session is busy (4009)', async () => {
    const f = await start();
    await client(f, 'sess-1').opened;
    expect((await client(f, 'sess-1').closed).code).toBe(STREAM_CLOSE.busy);
    expect(f.opens).toHaveLength(1);
  });
});

describe('the device joining', () => {
  it('asks the device with the grant it was admitted with, then splices: bytes both ways, counted, recorded', async () => {
    const f = await start();
    const { c, d, open } = await spliced(f, 'sess-1');
    expect(open).toEqual({
      type: 'stream.open',
      session_id: 'sess-1',
      stream_id: expect.stringMatching(/^[a-z2-7]{26}$/),
      protocol: 'shell',
      expires_at: FUTURE,
    });
    expect(d.ws.protocol).toBe(AGENT_SUBPROTOCOL);
    c.ws.send('keys from the client');
    await waitFor(() => d.messages.includes('keys from the client'), 'the device to get them');
    d.ws.send('output of the device');
    await waitFor(() => c.messages.includes('output of the device'), 'the client to get it');
    c.ws.close(1000);
    expect(await d.closed).toEqual({ code: 1000, reason: 'client disconnected' });
    await waitFor(() => f.clients.includes('detached sess-1'), 'the client gone');
    expect(f.clients).toEqual(['attached sess-1', 'detached sess-1']);
    expect(f.bytes.get('sess-1')).toEqual({ toDevice: 'keys from the client'.length, fromDevice: 'output of the device'.length });
    expect(f.recorded).toEqual([{ grant: GRANTS['sess-1'], fromClient: ['keys from the client'], fromDevice: ['output of the device'], ended: true }]);
  });

  it("passes a port-forward session's targets to the device, and records no stream but a shell's", async () => {
    const f = await start();
    await client(f, 'sess-2').opened;
    const open = await waitFor(() => f.opens[0], 'stream.open');
    expect(open.targets).toEqual(['127.0.0.1:5432']);
    await device(f, open, 'dev-2').opened;
    expect(f.recorded).toEqual([]);
  });

  it('takes the data stream only of the device the stream waits for, with its proof for that stream, once', async () => {
    const f = await start();
    await client(f, 'sess-1').opened;
    const open = await waitFor(() => f.opens[0], 'stream.open');
    expect(await device(f, open, 'dev-1', { proof: proofFor('dev-1', 'another-stream') }).status()).toBe(401);
    expect(await device(f, open, 'dev-2').status()).toBe(404); // a proven device, but not this stream's
    expect(await device(f, open, 'dev-1', { streamId: 'b'.repeat(26) }).status()).toBe(404); // no such stream
    expect(await device(f, open, 'dev-1').status()).toBe(101);
    expect(await device(f, open, 'dev-1').status()).toBe(404); // joined already
  });

  it('a device that does not join in time: the client gets 4504', async () => {
    const f = await start({ joinTimeoutMs: 200 });
    const c = client(f, 'sess-1');
    expect((await c.closed).code).toBe(STREAM_CLOSE.deviceTimeout);
    expect(f.clients).toEqual(['attached sess-1', 'detached sess-1']);
  });

  it('a device held by another node is asked through it, again until it answers yes', async () => {
    const routed: StreamOpen[] = [];
    const f = await start({ agentHere: false, routeStream: async (_deviceId, msg) => (routed.push(msg), routed.length >= 3) });
    const c = client(f, 'sess-1');
    await c.opened;
    await waitFor(() => routed.length >= 3, 'three tries');
    await new Promise((r) => setTimeout(r, 600));
    expect(routed).toHaveLength(3); // it said yes: no more
    expect(new Set(routed.map((m) => m.stream_id)).size).toBe(1);
    await device(f, routed[0]!, 'dev-1').opened;
  });

  it("tells the client why the device refused the stream (1011), and only for that device's stream", async () => {
    const f = await start();
    const c = client(f, 'sess-1');
    await c.opened;
    const open = await waitFor(() => f.opens[0], 'stream.open');
    expect(f.streams.refused('dev-2', open.stream_id, 'not mine')).toBe(false);
    expect(f.streams.refused('dev-1', open.stream_id, 'too many sessions')).toBe(true);
    expect(await c.closed).toEqual({ code: STREAM_CLOSE.internalError, reason: 'device refused: too many sessions' });
  });
});

describe('ending a stream', () => {
  it("closes both sides with the session's code when it closes or expires, and writes its counts at once", async () => {
    const f = await start();
    const { c, d } = await spliced(f, 'sess-1');
    c.ws.send('abc');
    await waitFor(() => d.messages.length > 0, 'a message through');
    f.streams.endSession('sess-1', 'expired');
    expect(await c.closed).toEqual({ code: STREAM_CLOSE.sessionExpired, reason: 'session expired' });
    expect((await d.closed).code).toBe(STREAM_CLOSE.sessionExpired);
    expect(f.bytes.get('sess-1')).toEqual({ toDevice: 3, fromDevice: 0 });
    expect(f.streams.size).toBe(0);
  });

  it('a revoked token closes the streams it admitted (4401), not the others', async () => {
    const f = await start();
    const byToken = await spliced(f, 'sess-tok', { bearer: 'bearer-tok_1' });
    const byTicket = await spliced(f, 'sess-1');
    f.streams.endToken('tok_1');
    expect((await byToken.c.closed).code).toBe(STREAM_CLOSE.noCredentials);
    await new Promise((r) => setTimeout(r, 100));
    expect(byTicket.c.ws.readyState).toBe(WebSocket.OPEN);
    expect(f.streams.size).toBe(1);
  });

  it('a stream joined with a token ends when the token expires (4401)', async () => {
    const soon = { ...GRANTS['sess-tok']!, tokenExpiresAt: new Date(Date.now() + 300).toISOString() };
    const f = await start({ grants: { ...GRANTS, 'sess-tok': soon } });
    const c = client(f, 'sess-tok', { bearer: 'bearer-tok_1' });
    await c.opened;
    expect((await c.closed).code).toBe(STREAM_CLOSE.noCredentials);
  });

  it('a device whose connection breaks: the client gets 1011', async () => {
    const f = await start();
    const { c, d } = await spliced(f, 'sess-1');
    d.ws.terminate();
    expect(await c.closed).toEqual({ code: STREAM_CLOSE.internalError, reason: 'device connection lost' });
  });

  it('closing the broker ends every stream with 1001', async () => {
    const f = await start();
    const { c, d } = await spliced(f, 'sess-1');
    const waiting = client(f, 'sess-2');
    await waiting.opened;
    await f.streams.close();
    expect((await c.closed).code).toBe(STREAM_CLOSE.serverShutdown);
    expect((await d.closed).code).toBe(STREAM_CLOSE.serverShutdown);
    expect((await waiting.closed).code).toBe(STREAM_CLOSE.serverShutdown);
  });
});
