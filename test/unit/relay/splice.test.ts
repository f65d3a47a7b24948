/**
 * The relay's splice with real sockets and ws clients at both ends: frames pass unchanged, a
 * slow reader pauses the writer, memory stays bounded, control frames are answered per hop and
 * never land inside a forwarded frame.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { acceptHop, type Hop } from '../../../relay/hop';
import { splice, type Splice } from '../../../relay/splice';
import { closePayload, encodeFrame, OPCODE, rawUpgrade, serverFrameFaults, type RawClient } from '../../helpers/raw-ws';
import { waitFor } from '../../helpers/wait';

const HWM = 256 * 1024;
const FRAME = 64 * 1024;

let cleanup: Array<() => void> = [];
afterEach(() => {
  for (const fn of cleanup.splice(0)) fn();
});

/** A server that splices its first two connections. */
async function spliceServer() {
  const server = createServer();
  cleanup.push(() => server.close());
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const serverSides: Hop[] = [];
  const counted = { aToB: 0, bToA: 0 };
  let s: Splice | undefined;
  let ended: { side: string; code: number } | undefined;
  const spliced = new Promise<void>((resolve) => {
    server.on('upgrade', (req, socket, head) => {
      const ws = acceptHop(req, socket, head, { maxPayload: 64 * 1024 * 1024, onSocketError: () => {} });
      if (!ws) return;
      serverSides.push(ws);
      if (serverSides.length === 2) {
        s = splice(serverSides[0]!, serverSides[1]!, {
          highWaterMark: HWM,
          onBytes: (d, n) => (counted[d] += n),
          onEnd: (side, code) => {
            ended = { side, code };
            return { code: 4321, reason: 'other side closed' };
          },
        });
        resolve();
      }
    });
  });
  const port = (server.address() as AddressInfo).port;
  return { url, port, spliced, serverSides, counted, splice: () => s!, ended: () => ended };
}

/** Two ws clients spliced to each other. */
async function pair() {
  const { url, spliced, ...rest } = await spliceServer();
  const writer = new WebSocket(url);
  await new Promise((r) => writer.once('open', r));
  const reader = new WebSocket(url);
  await new Promise((r) => reader.once('open', r));
  await spliced;
  cleanup.push(() => {
    writer.terminate();
    reader.terminate();
  });
  return { writer, reader, ...rest };
}

/** Two clients that write frames by hand, spliced to each other. */
async function rawPair(): Promise<{ a: RawClient; b: RawClient; ended: () => { side: string; code: number } | undefined; splice: () => Splice }> {
  const { port, spliced, ended, splice: spliceOf } = await spliceServer();
  const a = await rawUpgrade(port, '/');
  const b = await rawUpgrade(port, '/');
  await spliced;
  cleanup.push(() => {
    a.socket.destroy();
    b.socket.destroy();
  });
  return { a, b, ended, splice: spliceOf };
}

describe('splice', () => {
  it('passes binary and text frames unchanged both ways and counts them', async () => {
    const { writer, reader, counted } = await pair();
    const got: Array<[string, boolean]> = [];
    reader.on('message', (d, isBinary) => got.push([d.toString(), isBinary]));
    writer.send('{"type":"resize"}');
    writer.send(Buffer.from('bytes'));
    await waitFor(() => got.length === 2, 'two frames');
    expect(got).toEqual([
      ['{"type":"resize"}', false],
      ['bytes', true],
    ]);
    const back: string[] = [];
    writer.on('message', (d) => back.push(d.toString()));
    reader.send(Buffer.from('reply'));
    await waitFor(() => back.length === 1, 'the reply');
    expect(counted).toEqual({ aToB: 22, bToA: 5 });
  });

  it('a reader that stops reading pauses the writer; nothing is lost when it resumes', async () => {
    const { writer, reader, serverSides, splice: s } = await pair();
    const hash = createHash('sha256');
    let received = 0;
    const receivedHash = createHash('sha256');
    reader.on('message', (d: Buffer) => {
      received += d.length;
      receivedHash.update(d);
    });
    reader.pause(); // a client that never reads
    const total = 96 * 1024 * 1024;
    let sent = 0;
    let maxPending = 0;
    const memoryBefore = process.memoryUsage().arrayBuffers;
    let maxMemory = 0;
    // Write as fast as the writer's own socket takes it.
    while (sent < total && !serverSides[0]!.isPaused) {
      const chunk = randomBytes(FRAME);
      hash.update(chunk);
      writer.send(chunk);
      sent += FRAME;
      if (writer.bufferedAmount > 4 * 1024 * 1024) await new Promise((r) => setTimeout(r, 5));
      maxPending = Math.max(maxPending, s().pending().aToB);
      maxMemory = Math.max(maxMemory, process.memoryUsage().arrayBuffers - memoryBefore);
    }
    // The relay stopped reading the writer: its data now waits in the writer's socket.
    await waitFor(() => serverSides[0]!.isPaused, 'the writer side to be paused');
    // Keep writing until the kernel's buffers between writer and broker are full and the
    // writer's own queue grows (how much the kernel holds varies with its buffer autotuning).
    const beyond = sent + 32 * 1024 * 1024;
    while (writer.bufferedAmount === 0 && sent < beyond) {
      const chunk = randomBytes(FRAME);
      hash.update(chunk);
      writer.send(chunk);
      sent += FRAME;
      await new Promise((r) => setTimeout(r, 1));
      maxPending = Math.max(maxPending, s().pending().aToB);
    }
    expect(writer.bufferedAmount).toBeGreaterThan(0); // the writer sees backpressure
    expect(sent).toBeLessThan(total); // and was held back long before the end
    expect(maxPending).toBeLessThanOrEqual(HWM + FRAME);
    // Memory held by the splice stays near its high-water mark, not the bytes written.
    expect(maxMemory).toBeLessThan(32 * 1024 * 1024);
    reader.resume();
    await waitFor(() => received === sent, 'every byte to arrive', 30_000);
    expect(receivedHash.digest('hex')).toBe(hash.digest('hex'));
    expect(serverSides[0]!.isPaused).toBe(false);
  });

  it('closes the other side exactly once with the code onEnd chooses', async () => {
    const { writer, reader, ended } = await pair();
    const closed = new Promise<number>((r) => reader.once('close', (code) => r(code)));
    writer.close(1000);
    expect(await closed).toBe(4321);
    expect(ended()).toEqual({ side: 'a', code: 1000 });
  });

  it('passes fragments as fragments, and a message in pieces across reads, unchanged', async () => {
    const { a, b } = await rawPair();
    const body = randomBytes(200_000);
    const first = encodeFrame({ opcode: OPCODE.binary, fin: false, payload: body.subarray(0, 70_000) });
    const last = encodeFrame({ opcode: OPCODE.continuation, payload: body.subarray(70_000) });
    const bytes = Buffer.concat([first, last]);
    // Cut at odd places, so headers and masking keys straddle reads.
    await a.writePieces([bytes.subarray(0, 1), bytes.subarray(1, 9), bytes.subarray(9, 70_003), bytes.subarray(70_003, 70_020), bytes.subarray(70_020)]);
    await waitFor(() => b.frames.length === 2, 'both fragments');
    expect(b.frames.map((f) => [f.fin, f.opcode, f.masked])).toEqual([
      [false, OPCODE.binary, false],
      [true, OPCODE.continuation, false],
    ]);
    expect(Buffer.concat(b.frames.map((f) => f.payload)).equals(body)).toBe(true);
  });

  it('answers a ping on its own hop, after the frame it is forwarding there, never inside it', async () => {
    const { a, b } = await rawPair();
    const big = randomBytes(100_000);
    const frame = encodeFrame({ opcode: OPCODE.binary, payload: big });
    // a's frame to b is half passed on when b pings: the pong must wait for its end.
    await a.writePieces([frame.subarray(0, 50_000)]);
    await waitFor(() => b.socket.bytesRead > 40_000, 'half the frame to reach b');
    await b.writePieces([encodeFrame({ opcode: OPCODE.ping, payload: Buffer.from('are you there') })]);
    await a.writePieces([frame.subarray(50_000)]);
    await a.writePieces([encodeFrame({ opcode: OPCODE.ping, payload: Buffer.from('a asks') })]);
    const pong = await b.waitForFrame((f) => f.opcode === OPCODE.pong, 'the pong to b');
    expect(pong.payload.toString()).toBe('are you there');
    expect(b.frames.map((f) => f.opcode)).toEqual([OPCODE.binary, OPCODE.pong]);
    expect(b.frames[0]!.payload.equals(big)).toBe(true);
    // a's own ping is answered to a and never reaches b.
    expect((await a.waitForFrame((f) => f.opcode === OPCODE.pong, 'the pong to a')).payload.toString()).toBe('a asks');
    expect(serverFrameFaults(b.frames)).toEqual([]);
  });

  it('echoes a close per hop and carries its code to the other side', async () => {
    const { a, b, ended } = await rawPair();
    await a.writePieces([encodeFrame({ opcode: OPCODE.close, payload: closePayload(4000, 'done here') })]);
    expect((await a.waitForFrame((f) => f.opcode === OPCODE.close, 'the echo')).payload.readUInt16BE(0)).toBe(4000);
    expect((await b.waitForFrame((f) => f.opcode === OPCODE.close, 'the close')).payload.readUInt16BE(0)).toBe(4321);
    expect(ended()).toEqual({ side: 'a', code: 4000 });
    await a.closed; // the server ends the TCP connection after the handshake
  });

  it('cuts the other side when one is lost inside a frame, rather than finish it with made-up bytes', async () => {
    const { a, b, ended } = await rawPair();
    const frame = encodeFrame({ opcode: OPCODE.binary, payload: randomBytes(10_000) });
    await a.writePieces([frame.subarray(0, 5_000)]);
    await waitFor(() => b.socket.bytesRead > 4_000, 'part of the frame to reach b');
    a.socket.end();
    await b.closed;
    expect(b.closeCode()).toBe(undefined); // no close frame: it would have landed inside the frame
    expect(ended()).toEqual({ side: 'a', code: 1006 });
  });

  it('a frame that breaks the rules ends its hop with 1002, and the other side gets a code', async () => {
    const { a, b, ended } = await rawPair();
    await a.writePieces([encodeFrame({ opcode: OPCODE.binary, masked: false, payload: Buffer.from('unmasked') })]);
    expect((await a.waitForFrame((f) => f.opcode === OPCODE.close, 'the refusal')).payload.readUInt16BE(0)).toBe(1002);
    expect((await b.waitForFrame((f) => f.opcode === OPCODE.close, 'the close')).payload.readUInt16BE(0)).toBe(4321);
    expect(ended()).toEqual({ side: 'a', code: 1002 });
  });

  it('ending a splice inside a frame finishes that frame first, then closes with the code, and passes nothing after', async () => {
    const { a, b, splice: s } = await rawPair();
    const body = randomBytes(100_000);
    const frame = encodeFrame({ opcode: OPCODE.binary, payload: body });
    await a.writePieces([frame.subarray(0, 30_000)]);
    await waitFor(() => b.socket.bytesRead > 20_000, 'part of the frame to reach b');
    s().end(4000, 'session closed', 4000, 'session closed');
    await a.writePieces([frame.subarray(30_000), encodeFrame({ opcode: OPCODE.binary, payload: Buffer.from('after the end') })]);
    const close = await b.waitForFrame((f) => f.opcode === OPCODE.close, 'the close');
    expect(close.payload.readUInt16BE(0)).toBe(4000);
    expect(b.frames.map((f) => f.opcode)).toEqual([OPCODE.binary, OPCODE.close]);
    expect(b.frames[0]!.payload.equals(body)).toBe(true);
    expect((await a.waitForFrame((f) => f.opcode === OPCODE.close, 'the close to a')).payload.readUInt16BE(0)).toBe(4000);
  });
});
