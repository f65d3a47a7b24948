/**
 * The relay's reused read buffers (`relay/read-buffers.ts`) on the Node that runs the tests: an
 * upgraded TCP socket is adopted (a Node that no longer allows it fails here, not silently in
 * the benchmark), its reads land in a few buffers used again and again, a buffer still held by
 * pending writes is never read into, and anything else is read by Node as before.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { PassThrough, type Duplex } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { readIntoReusedBuffers } from '../../../relay/read-buffers';
import { waitFor } from '../../helpers/wait';

const MiB = 1024 * 1024;

let cleanup: Array<() => void> = [];
afterEach(() => {
  for (const fn of cleanup.splice(0)) fn();
});

/** A server whose upgrades are read by `readIntoReusedBuffers` with `settled`; a client that sends `bytes` random bytes after its upgrade. */
async function upgradeAndSend(bytes: number, settled: () => boolean) {
  const server: Server = createServer();
  cleanup.push(() => server.closeAllConnections());
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const chunks: Buffer[] = [];
  const copies: Buffer[] = [];
  const adopted = new Promise<{ socket: Duplex; pooled: boolean }>((resolve) => {
    server.on('upgrade', (_req, raw: Duplex) => {
      raw.on('error', () => {});
      raw.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: test\r\nConnection: Upgrade\r\n\r\n');
      const reader = readIntoReusedBuffers(raw, {
        chunk: (chunk) => {
          chunks.push(chunk);
          copies.push(Buffer.from(chunk));
        },
        settled,
        error: () => {},
      });
      cleanup.push(() => reader.socket.destroy());
      reader.socket.resume();
      resolve(reader);
    });
  });
  const client: Socket = connect((server.address() as AddressInfo).port, '127.0.0.1');
  client.on('error', () => {});
  cleanup.push(() => client.destroy());
  await new Promise<void>((r) => client.once('connect', r));
  client.write('GET / HTTP/1.1\r\nHost: x\r\nUpgrade: test\r\nConnection: Upgrade\r\n\r\n');
  const reader = await adopted;
  const sent = createHash('sha256');
  const block = randomBytes(MiB);
  for (let i = 0; i < bytes / MiB; i++) {
    sent.update(block);
    if (!client.write(block)) await new Promise((r) => client.once('drain', r));
  }
  const total = () => chunks.reduce((n, c) => n + c.length, 0);
  await waitFor(() => total() === bytes, 'every byte read');
  return { server, reader, chunks, copies, sentHash: sent.digest('hex') };
}

const hashOf = (parts: Buffer[]) => parts.reduce((h, p) => h.update(p), createHash('sha256')).digest('hex');

describe('reads into reused buffers', () => {
  it('adopts an upgraded TCP socket and reads it into a few buffers used again and again', async () => {
    const { reader, chunks } = await upgradeAndSend(32 * MiB, () => true);
    expect(reader.pooled).toBe(true);
    // Node's own reads give every read a new buffer: 32 MiB come in hundreds of them.
    const distinct = new Set(chunks.map((c) => c.buffer));
    expect(chunks.length).toBeGreaterThan(32);
    expect(distinct.size).toBeLessThanOrEqual(4);
  });

  it('passes every byte in order, and never reads into a buffer while writes may still hold it', async () => {
    // Nothing ever settles: every buffer read into stays held, so none may be read into again.
    const { reader, chunks, copies, sentHash } = await upgradeAndSend(16 * MiB, () => false);
    expect(reader.pooled).toBe(true);
    expect(hashOf(copies)).toBe(sentHash);
    // The views kept still hold what was read into them: no later read overwrote them.
    expect(hashOf(chunks)).toBe(sentHash);
    expect(new Set(chunks.map((c) => c.buffer)).size).toBe(chunks.length);
  });

  it('once writes settle, the bytes read are still every byte in order', async () => {
    const { copies, sentHash } = await upgradeAndSend(16 * MiB, () => true);
    expect(hashOf(copies)).toBe(sentHash);
  });

  it('lets the server count the adopted connection as closed, so that the server can close', async () => {
    const { server, reader } = await upgradeAndSend(MiB, () => true);
    reader.socket.destroy();
    await new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve())));
  });

  it('leaves a stream that is not a plain TCP socket to Node, and reads it all the same', () => {
    const stream = new PassThrough();
    const seen: Buffer[] = [];
    const reader = readIntoReusedBuffers(stream, { chunk: (c) => seen.push(c), settled: () => true, error: () => {} });
    expect(reader.pooled).toBe(false);
    expect(reader.socket).toBe(stream);
    stream.write(Buffer.from('hello'));
    expect(Buffer.concat(seen).toString()).toBe('hello');
  });
});
