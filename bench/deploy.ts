/**
 * @module Section `deploy`: the `docker` deployment runtime through a real `tether server` (a
 * dockerd and a registry of the benchmark's own, bench/docker.ts): time from apply to every
 * replica ready for a few replica counts; requests per second and p99 through the ingress (HAProxy,
 * Host = the service) beside the same container reached directly on its published loopback port;
 * and the requests that fail while a rolling update to a second image runs under that load.
 * Needs root (dockerd) and the Debian packages bench/docker.ts names: without them, one line
 * says so and the section is skipped.
 */
import { Agent, request } from 'node:http';
import { join } from 'node:path';
import { adoptIngress } from '../api/services/docker/ingress';
import { silentLogger } from '../shared/log';
import { buildServiceImage, dockerPrograms, startDocker, startRegistry, type DockerDaemon, type Registry } from './docker';
import { percentile, round, startServer, stopChild, tempDir, type Result, type ServerProcess } from './lib';

export interface DeployPlan {
  /** One service per count, applied one after another. */
  replicas: number[];
  /** Seconds of load through the ingress, and again directly. */
  loadSeconds: number;
  /** Concurrent keep-alive clients. */
  clients: number;
}

const SECTION = 'deploy';

interface Reply {
  status: number;
  text: string;
}

function send(url: string, method: string, headers: Record<string, string>, body?: string, agent?: Agent): Promise<Reply> {
  return new Promise((done, fail) => {
    const req = request(url, { method, headers, agent, timeout: 10_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => done({ status: res.statusCode!, text: Buffer.concat(chunks).toString() }));
      res.on('error', fail);
    });
    req.on('error', fail);
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.end(body);
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function spec(name: string, image: string, replicas: number): string {
  return [
    'service:',
    `  name: ${name}`,
    `  image: ${image}`,
    '  port: 8080',
    'deployment:',
    `  replicas: ${replicas}`,
    '  health: {path: /, interval_seconds: 1, timeout_seconds: 1, retries: 2}',
    '',
  ].join('\n');
}

interface ServiceRecord {
  status: string;
  gitops_sync_status: string;
  current_revision: string;
  endpoint?: string;
  replicas: { desired: number; ready: number };
}

/** Load: `clients` loops of GET / with keep-alive until `until()` says stop; counts answers other than 200. */
async function load(
  url: string,
  host: string,
  clients: number,
  until: () => boolean,
): Promise<{ requests: number; errors: number; seconds: number; p99: number }> {
  const agent = new Agent({ keepAlive: true, maxSockets: clients });
  const latencies: number[] = [];
  let errors = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (!until()) {
        const start = performance.now();
        try {
          const r = await send(url, 'GET', { host }, undefined, agent);
          if (r.status !== 200) errors++;
        } catch {
          errors++;
        }
        latencies.push(performance.now() - start);
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  agent.destroy();
  latencies.sort((a, b) => a - b);
  return { requests: latencies.length, errors, seconds, p99: percentile(latencies, 99) };
}

const forSeconds = (s: number) => {
  const end = performance.now() + s * 1000;
  return () => performance.now() >= end;
};

export async function deployBench(plan: DeployPlan): Promise<Result[]> {
  try {
    await dockerPrograms();
  } catch (err) {
    const why = (err as Error).message.replace('the docker runtime tests', 'the deploy benchmark').replace('the tests again', 'the benchmark again');
    console.log(`deploy: skipped: ${why}`);
    return [{ section: SECTION, name: 'skipped (needs root and the Docker packages)', value: 'skipped', unit: '', target: 'reported', met: null }];
  }
  const results: Result[] = [];
  let daemon: DockerDaemon | undefined;
  let registry: Registry | undefined;
  let server: ServerProcess | undefined;
  try {
    [daemon, registry] = await Promise.all([startDocker(), startRegistry()]);
    const v1 = await buildServiceImage(daemon, registry, { name: 'bench', tag: '1.0.0', body: 'v1\n' });
    const v2 = await buildServiceImage(daemon, registry, { name: 'bench', tag: '2.0.0', body: 'v2\n' });
    const home = tempDir('tether-bench-home-');
    server = await startServer({ DOCKER_HOST: daemon.host, TETHER_DEPLOY_RUNTIME_DEV: 'docker', HOME: home });
    const auth = { authorization: `Bearer ${server.token}` };
    const url = server.url;
    const apply = async (yaml: string) => {
      const r = await send(`${url}/v1/services?env=dev`, 'POST', { ...auth, 'content-type': 'application/yaml' }, yaml);
      if (r.status !== 200) throw new Error(`apply answered ${r.status}: ${r.text.slice(0, 300)}`);
    };
    const record = async (name: string) => JSON.parse((await send(`${url}/v1/services/${name}?env=dev`, 'GET', auth)).text).data as ServiceRecord;
    const settled = async (name: string, revision: string, replicas: number, timeoutMs: number) => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const r = await record(name);
        if (r.status === 'healthy' && r.gitops_sync_status === 'Synced' && r.current_revision === revision && r.replicas.ready === replicas) return r;
        if (Date.now() > deadline) throw new Error(`${name} not ready after ${timeoutMs} ms: ${JSON.stringify(r)}`);
        await sleep(50);
      }
    };

    // 1. Apply → every replica ready, one service per count.
    const first = `deploy-${plan.replicas[0]}`;
    for (const n of plan.replicas) {
      const name = `deploy-${n}`;
      const t0 = performance.now();
      await apply(spec(name, v1, n));
      await settled(name, 'v1.0.0', n, 300_000);
      const seconds = (performance.now() - t0) / 1000;
      results.push({
        section: SECTION,
        name: `apply to ${n} replica${n === 1 ? '' : 's'} ready`,
        value: round(seconds, 2),
        unit: 's',
        target: 'reported',
        met: null,
      });
      // The larger services go, so that their health checks do not weigh on the load below.
      if (name !== first) {
        await send(`${url}/v1/services/${name}?env=dev`, 'DELETE', auth);
        const d = daemon;
        const deadline = Date.now() + 120_000;
        while ((await d.docker.listContainers({ all: true, filters: { label: [`tether.service=${name}`] } })).length > 0 && Date.now() < deadline)
          await sleep(200);
      }
    }

    // 2. The one-replica service: through the ingress, then its container directly.
    const rec = await record(first);
    const endpoint = rec.endpoint!;
    const [container] = await daemon.docker.listContainers({ filters: { label: [`tether.service=${first}`], status: ['running'] } });
    const published = container?.Ports.find((p) => p.PrivatePort === 8080 && p.IP === '127.0.0.1' && p.PublicPort);
    if (!published) throw new Error(`no published 127.0.0.1 port for ${first}: ${JSON.stringify(container?.Ports)}`);
    const direct = `http://127.0.0.1:${published.PublicPort}/`;
    const via = await load(`${endpoint}/`, first, plan.clients, forSeconds(plan.loadSeconds));
    const straight = await load(direct, first, plan.clients, forSeconds(plan.loadSeconds));
    const clients = `${plan.clients} keep-alive clients, ${plan.loadSeconds} s`;
    results.push(
      {
        section: SECTION,
        name: `requests/s through the ingress (${clients})`,
        value: round(via.requests / via.seconds, 0),
        unit: 'req/s',
        target: 'reported',
        met: null,
      },
      {
        section: SECTION,
        name: 'requests/s to the container directly',
        value: round(straight.requests / straight.seconds, 0),
        unit: 'req/s',
        target: 'reported',
        met: null,
      },
      { section: SECTION, name: 'p99 through the ingress', value: round(via.p99, 2), unit: 'ms', target: 'reported', met: null },
      { section: SECTION, name: 'p99 to the container directly', value: round(straight.p99, 2), unit: 'ms', target: 'reported', met: null },
      { section: SECTION, name: 'errors under load (ingress + direct)', value: via.errors + straight.errors, unit: 'requests', target: 'reported', met: null },
    );

    // 3. A rolling update to v2 under that load through the ingress.
    let done = false;
    const loading = load(`${endpoint}/`, first, plan.clients, () => done);
    await sleep(500);
    const t0 = performance.now();
    await apply(spec(first, v2, plan.replicas[0]!));
    await settled(first, 'v2.0.0', plan.replicas[0]!, 300_000);
    const rollSeconds = (performance.now() - t0) / 1000;
    await sleep(1000);
    const body = (await send(`${endpoint}/`, 'GET', { host: first })).text;
    done = true;
    const during = await loading;
    if (body !== 'v2\n') throw new Error(`after the update the ingress answered ${JSON.stringify(body)}, not v2`);
    results.push(
      { section: SECTION, name: 'rolling update v1 → v2 ready (under load)', value: round(rollSeconds, 2), unit: 's', target: 'reported', met: null },
      {
        section: SECTION,
        name: `errors during the rolling update (of ${during.requests} requests)`,
        value: during.errors,
        unit: 'requests',
        target: '= 0',
        met: during.errors === 0,
      },
    );
    return results;
  } finally {
    if (server) {
      await stopChild(server.child);
      // tether leaves the ingress serving across its restarts: the benchmark stops it itself.
      const ingress = await adoptIngress({
        environment: 'dev',
        listen: '127.0.0.1:0',
        runDir: join(server.dataDir, 'ingress', 'dev'),
        log: silentLogger,
      }).catch(() => undefined);
      await ingress?.stop();
      await server.stop();
    }
    await registry?.stop();
    await daemon?.stop(); // removes its containers and networks first
  }
}
