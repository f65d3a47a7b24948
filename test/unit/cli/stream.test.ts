/** The client stream against a real WebSocket peer on port 0 that plays the device's part. */
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import { DeviceError, openStream, StreamClosedError, type ClientStream } from '../../../cli/stream';
import { CliError } from '../../../cli/errors';
import { STREAM_END, uploadDone, uploadReady, type Request } from '../../../shared/protocol/session-stream';

interface Peer {
  ws: WebSocket;
  /** The next text frame the client sent, parsed. */
  next(): Promise<Record<string, unknown>>;
  sendJson(frame: unknown): void;
}

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A server that accepts one client; resolves with the client stream and the device's end of it. */
async function connect(): Promise<{ stream: ClientStream; peer: Peer }> {
  const server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((resolve) => server.once('listening', resolve));
  cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const accepted = new Promise<WebSocket>((resolve) => server.once('connection', resolve));
  const stream = await openStream(`ws://127.0.0.1:${(server.address() as AddressInfo).port}/`);
  cleanups.push(() => stream.close());
  const ws = await accepted;
  const queue: Array<Record<string, unknown>> = [];
  const waiters: Array<(frame: Record<string, unknown>) => void> = [];
  ws.on('message', (data, isBinary) => {
    if (isBinary) return;
    const frame = JSON.parse(data.toString()) as Record<string, unknown>;
    const waiter = waiters.shift();
    if (waiter) waiter(frame);
    else queue.push(frame);
  });
  const peer: Peer = {
    ws,
    next: () => (queue.length ? Promise.resolve(queue.shift()!) : new Promise((resolve) => waiters.push(resolve))),
    sendJson: (frame) => ws.send(JSON.stringify(frame)),
  };
  return { stream, peer };
}

describe('client stream requests', () => {
  it("sends {id, op, params} and resolves with the one answer's result", async () => {
    const { stream, peer } = await connect();
    const result = stream.request('system.info');
    const req = (await peer.next()) as Request;
    expect(req).toEqual({ id: 1, op: 'system.info', params: {} });
    peer.sendJson({ id: req.id, ok: true, result: { hostname: 'h' } });
    expect(await result).toEqual({ hostname: 'h' });
  });

  it("rejects an error answer with the device's code as data", async () => {
    const { stream, peer } = await connect();
    const result = stream.request('stat', { path: '/nope' });
    const req = await peer.next();
    peer.sendJson({ id: req.id, ok: false, error: { code: 'not_found', message: 'no such file or directory' } });
    const err = await result.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DeviceError);
    expect(err).toMatchObject({ code: 'not_found', message: 'no such file or directory (not_found)', exitCode: 1 });
  });

  it('checks a result against the schema it is given', async () => {
    const { stream, peer } = await connect();
    const result = stream.request('upload', { path: '/' }, uploadReady);
    peer.sendJson({ id: (await peer.next()).id, ok: true, result: { ready: 'maybe' } });
    await expect(result).rejects.toMatchObject({ code: 'bad_answer' });
  });

  it('routes answers by id, whatever order they come in', async () => {
    const { stream, peer } = await connect();
    const a = stream.request('a');
    const b = stream.request('b');
    const [ra, rb] = [await peer.next(), await peer.next()];
    peer.sendJson({ id: rb.id, ok: true, result: 'b' });
    peer.sendJson({ id: ra.id, ok: true, result: 'a' });
    expect([await a, await b]).toEqual(['a', 'b']);
  });
});

describe('requests answered more than once', () => {
  it('upload: ready, then the final answer once the client sent its end', async () => {
    const { stream, peer } = await connect();
    const call = stream.call('upload', { path: '/srv' });
    const req = await peer.next();
    peer.sendJson({ id: req.id, ok: true, result: { ready: true } });
    expect(await call.answer(uploadReady)).toEqual({ ready: true });
    const final = call.answer(uploadDone);
    call.uploadEnd();
    expect(await peer.next()).toEqual({ id: req.id, op: 'end' });
    peer.sendJson({ id: req.id, ok: true, result: { files: 2, bytes: 10 } });
    expect(await final).toEqual({ files: 2, bytes: 10 });
  });

  it('upload: a refusal that comes before anyone waits for it is kept', async () => {
    const { stream, peer } = await connect();
    const call = stream.call('upload', { path: '/srv' });
    const req = await peer.next();
    const later = stream.request('later');
    const laterReq = await peer.next();
    peer.sendJson({ id: req.id, ok: true, result: { ready: true } });
    peer.sendJson({ id: req.id, ok: false, error: { code: 'too_large', message: 'over the limit' } });
    peer.sendJson({ id: laterReq.id, ok: true, result: null });
    await call.answer(uploadReady);
    await later; // frames arrive in order: the refusal is in before anyone waits for it
    await expect(call.answer(uploadDone)).rejects.toMatchObject({ code: 'too_large' });
  });

  it('download: the answer, the bytes, then the done frame', async () => {
    const { stream, peer } = await connect();
    const bytes: Buffer[] = [];
    stream.onBinary((b) => bytes.push(b));
    const call = stream.call('download', { path: '/f' });
    const req = await peer.next();
    peer.sendJson({ id: req.id, ok: true, result: { format: 'tar' } });
    peer.ws.send(Buffer.from('tar bytes'), { binary: true });
    peer.sendJson({ id: req.id, done: true, bytes: 9, files: 1 });
    expect(await call.answer()).toEqual({ format: 'tar' });
    expect(await call.downloadDone()).toEqual({ id: req.id, done: true, bytes: 9, files: 1 });
    expect(Buffer.concat(bytes).toString()).toBe('tar bytes');
  });

  it('download: an error in place of the done frame rejects with its code', async () => {
    const { stream, peer } = await connect();
    const call = stream.call('download', { path: '/f' });
    const req = await peer.next();
    peer.sendJson({ id: req.id, ok: true, result: { format: 'tar' } });
    peer.sendJson({ id: req.id, ok: false, error: { code: 'io_error', message: 'I/O error' } });
    await call.answer();
    await expect(call.downloadDone()).rejects.toMatchObject({ code: 'io_error' });
  });
});

describe('other frames', () => {
  it("passes the shell's exit on, sends resize frames, and drops what it does not know", async () => {
    const { stream, peer } = await connect();
    const exits: number[] = [];
    stream.onShellExit((e) => exits.push(e.code));
    stream.resize(120, 40);
    expect(await peer.next()).toEqual({ type: 'resize', cols: 120, rows: 40 });
    peer.ws.send('not json');
    peer.sendJson({ type: 'exit', code: 'zero' });
    peer.sendJson({ id: 99, ok: true, result: 'for nobody' });
    peer.sendJson({ id: null, ok: false, error: { code: 'bad_params', message: 'frame is not JSON' } });
    peer.sendJson({ type: 'exit', code: 3 });
    const pending = stream.request('after');
    peer.sendJson({ id: (await peer.next()).id, ok: true, result: 'still works' });
    expect(await pending).toBe('still works');
    expect(exits).toEqual([3]);
  });
});

describe('the stream closing', () => {
  it('rejects every wait with the close in plain words, and later requests too', async () => {
    const { stream, peer } = await connect();
    const call = stream.call('upload', { path: '/' });
    const waiting = call.answer();
    await peer.next();
    const { code, text } = STREAM_END.agent_stopping;
    peer.ws.close(code, text);
    const err = await waiting.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StreamClosedError);
    expect(err).toMatchObject({ code: 'stream_closed', closeCode: code, closeReason: text, message: "the device's agent stopped" });
    expect(await stream.closed).toEqual({ code, reason: text });
    await expect(stream.request('late')).rejects.toBeInstanceOf(StreamClosedError);
  });

  it('says so when it cannot connect at all', async () => {
    const err = await openStream('ws://127.0.0.1:1/').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CliError);
    expect(err).toMatchObject({ code: 'unreachable' });
  });
});
