/**
 * For the ingress tests (test/e2e/ingress.test.ts): tiny Node HTTP servers as replicas, requests
 * through the ingress with a chosen Host, traffic that runs until stopped, and a look at the
 * HAProxy processes in /proc. Replicas and the client's sockets are closed when the file ends.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { Agent, createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll } from 'vitest';

const agent = new Agent({ keepAlive: true, maxSockets: 16 });
const backends: Backend[] = [];
afterAll(async () => {
  agent.destroy();
  await closeBackends();
});

/** Closes the replicas started so far. */
export async function closeBackends(): Promise<void> {
  for (const b of backends.splice(0)) await b.close();
}

/** True while `pid` runs (a zombie does not count). */
export function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

/** The pids of the HAProxy processes running `config`. */
export function haproxiesOf(config: string): number[] {
  return readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .filter((d) => {
      try {
        return readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0').includes(config) && running(Number(d));
      } catch {
        return false;
      }
    })
    .map(Number);
}

/** A port free on 127.0.0.1 a moment ago. */
export { freePort } from '../../bench/free-port';

export interface Backend {
  name: string;
  address: string;
  /** Slow requests (`?delay` of 100 ms or more; not `load`'s 5 ms) that arrived and are not answered yet. */
  slowInFlight(): number;
  /** Slow requests that arrived, answered or not. */
  slowArrived(): number;
  close(): Promise<void>;
}

const SLOW_MS = 100;

/** A replica: answers 200 with its name, after `?delay=MS` when asked. */
export async function backend(name: string): Promise<Backend> {
  let delayed = 0;
  let arrived = 0;
  const server: Server = createServer((req, res) => {
    const delay = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('delay') ?? 0);
    const slow = delay >= SLOW_MS;
    if (slow) {
      delayed++;
      arrived++;
    }
    setTimeout(() => {
      if (slow) delayed--;
      res.end(name);
    }, delay);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const b: Backend = {
    name,
    address: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    slowInFlight: () => delayed,
    slowArrived: () => arrived,
    close: () => {
      server.closeAllConnections();
      return new Promise((r) => server.close(() => r()));
    },
  };
  backends.push(b);
  return b;
}

/** One request through the ingress with this Host; status and body. */
export function get(endpoint: string, host: string, path = '/'): Promise<{ status: number; body: string }> {
  const url = new URL(endpoint);
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, path, headers: { host }, agent }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** `n` requests one after the other: how many each body (server name) got. */
export async function tally(endpoint: string, host: string, n: number): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (let i = 0; i < n; i++) {
    const { status, body } = await get(endpoint, host);
    const key = status === 200 ? body : `HTTP ${status}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return counts;
}

/** Requests from `workers` loops until `stop()`: every status seen, and what answered. */
export function load(endpoint: string, host: string, workers = 4, path = '/?delay=5') {
  let on = true;
  const statuses = new Map<string, number>();
  const bodies = new Map<string, number>();
  const loops = Array.from({ length: workers }, async () => {
    while (on) {
      const outcome = await get(endpoint, host, path).catch((err: Error) => ({ status: 0, body: err.message }));
      const key = String(outcome.status);
      statuses.set(key, (statuses.get(key) ?? 0) + 1);
      bodies.set(outcome.body, (bodies.get(outcome.body) ?? 0) + 1);
    }
  });
  return {
    statuses,
    bodies,
    async stop() {
      on = false;
      await Promise.all(loops);
    },
  };
}
