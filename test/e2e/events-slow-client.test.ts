/**
 * `GET /v1/events` and a client that does not read: the server cuts it off once its events back
 * up past `MAX_BUFFERED_BYTES`, rather than queueing them for it in memory without end. The API
 * runs in this process over real HTTP, and its presence port (what a cluster's control node
 * reports, thousands of changes at once) makes tens of megabytes of events in a second; agents
 * coming and going one by one would take minutes to fill the kernel's socket buffers first.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApi, type Api } from '../../api/app';
import { simulatedRuntime } from '../../api/services/simulated-runtime';
import { MAX_BUFFERED_BYTES } from '../../api/events/routes';
import { bootstrapAdmin } from '../../api/identity/bootstrap';
import { detachedRelay } from '../../api/relay';
import type { TetherEvent } from '../../api/events/hub';
import type { Store } from '../../api/store/index';
import { openTestStore } from '../helpers/store';
import { createLogger } from '../../shared/log';
import { createMetrics } from '../../shared/metrics';
import { createTicketer } from '../../shared/auth/tickets';
import { tempDir } from '../helpers/stack';

const ADMIN_TOKEN = 'slow-client-admin-token-0123456789';

/**
 * What this process keeps: the heap and Buffers after a full collection. Not the RSS: that counts
 * garbage V8 has not collected yet, and how much it lets pile up depends on its heuristics, not on
 * what the server keeps (once V8 pretenures the events' allocation sites, every later event is
 * born in the old space and tens of megabytes of dead events wait for the next full collection).
 */
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
function kept(): number {
  gc();
  const { heapUsed, external } = process.memoryUsage();
  return heapUsed + external;
}
let store: Store;
let api: Api;
let server: Server;
let port: number;
const logs: string[] = [];

beforeAll(async () => {
  const dir = tempDir();
  store = await openTestStore(dir);
  api = createApi({
    store,
    relay: detachedRelay,
    log: createLogger({ level: 'debug', write: (line) => logs.push(line) }),
    metrics: createMetrics(),
    ticketer: createTicketer(Buffer.alloc(32, 1)),
    wsBase: () => 'ws://127.0.0.1:0',
    node: { run: 'server-testtest', url: 'http://127.0.0.1:0' },
    now: Date.now,
    runtime: simulatedRuntime(10),
    recordings: { dir: tempDir(), recordShell: false, recordInput: false, maxStoredBytes: 1 << 20, retentionDays: 90 },
  });
  await bootstrapAdmin(store, dir, ADMIN_TOKEN, Date.now);
  server = createServer(api.callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  await api.shutdown();
  await store.close();
});

/**
 * A batch of presence events with long device ids (about 140 bytes of stream each), as another
 * peer's would arrive: straight to the event streams, so that what grows is theirs alone.
 */
function changes(n: number, round: number): TetherEvent[] {
  const at = new Date().toISOString();
  return Array.from({ length: n }, (_, i) => ({
    event: i % 2 === 0 ? 'agent.online' : 'agent.offline',
    data: { device_id: `slow-${round}-${i}-`.padEnd(64, 'x'), at },
  }));
}

describe('an events client that does not read', () => {
  it('is cut off once its events back up, and the server does not grow with what it was not sent', async () => {
    const client = connect(port, '127.0.0.1');
    client.on('error', () => {});
    client.write(`GET /v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${ADMIN_TOKEN}\r\n\r\n`);
    // Reads the response's head, then never another byte.
    const head = await new Promise<string>((resolve) => client.once('data', (chunk: Buffer) => resolve(chunk.toString('utf8'))));
    client.pause();
    expect(head).toMatch(/^HTTP\/1\.1 200 /);
    const closed = new Promise<void>((resolve) => client.once('close', () => resolve()));

    const keptBefore = kept();
    const total = 64 * 1024 * 1024; // far beyond the bound and every socket buffer of the kernel
    let generated = 0;
    for (let round = 0; generated < total; round++) {
      for (const e of changes(2000, round)) api.fromPeers.event(e);
      generated += 2000 * 140;
      await new Promise((resolve) => setImmediate(resolve)); // the socket writes what it can
    }
    // The stream was cut off and freed: what was not sent is not kept (queued, it would be all of it).
    expect(kept() - keptBefore).toBeLessThan(total / 8);

    // What reached the client is what the kernel held plus at most the bound, then the end.
    let received = 0;
    client.on('data', (chunk: Buffer) => (received += chunk.length));
    client.resume();
    const ended = await Promise.race([closed.then(() => true), new Promise((resolve) => setTimeout(resolve, 10_000, false))]);
    expect(ended, 'the server to close the stream').toBe(true);
    expect(received).toBeGreaterThan(0);
    expect(received).toBeLessThan(total / 4);
    expect(MAX_BUFFERED_BYTES).toBeLessThan(total / 16);
    expect(logs.filter((l) => l.includes('an events stream fell behind'))).toHaveLength(1);
    expect(logs.filter((l) => l.includes('"level":"error"'))).toEqual([]);
  }, 60_000);
});
