/** The broker's splice with real sockets: a slow reader pauses the writer; memory stays bounded. */
import { createHash, randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import { splice, type Splice } from '../../../broker/splice';
import { waitFor } from '../../helpers/wait';

const HWM = 256 * 1024;
const LWM = 64 * 1024;
const FRAME = 64 * 1024;

let cleanup: Array<() => void> = [];
afterEach(() => {
  for (const fn of cleanup.splice(0)) fn();
});

/** A server that splices its first two connections; returns the two client ends. */
async function pair() {
  const server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  cleanup.push(() => server.close());
  await new Promise((r) => server.once('listening', r));
  const url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const serverSides: WebSocket[] = [];
  const counted = { aToB: 0, bToA: 0 };
  let s: Splice | undefined;
  let ended: { side: string; code: number } | undefined;
  const spliced = new Promise<void>((resolve) => {
    server.on('connection', (ws) => {
      serverSides.push(ws);
      if (serverSides.length === 2) {
        s = splice(serverSides[0]!, serverSides[1]!, {
          highWaterMark: HWM,
          lowWaterMark: LWM,
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
  const writer = new WebSocket(url);
  await new Promise((r) => writer.once('open', r));
  const reader = new WebSocket(url);
  await new Promise((r) => reader.once('open', r));
  await spliced;
  cleanup.push(() => {
    writer.terminate();
    reader.terminate();
  });
  return { writer, reader, serverSides, counted, splice: () => s!, ended: () => ended };
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
    // The broker stopped reading the writer: its data now waits in the writer's socket.
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
});
