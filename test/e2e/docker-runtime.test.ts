/**
 * The `docker` deployment runtime against a real engine and HAProxy (CONTRACT 10.6), driven the
 * way the API drives it (apply, canary weight, remove) and judged by its reports and by HTTP
 * through the ingress: replicas become ready and answer; a rolling update answers every request;
 * a canary takes exactly its share; a revision that never gets healthy fails and leaves the
 * previous one serving; a replica removed by hand comes back; a new runtime adopts what runs
 * without a duplicate or a gap; delete leaves nothing. One daemon and registry for the file.
 */
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dockerRuntime } from '../../api/services/docker/runtime';
import { adoptIngress } from '../../api/services/docker/ingress';
import type { DeploymentRuntime, RevisionRun, RolloutTarget, RuntimeReport } from '../../api/services/runtime';
import { createLogger, silentLogger } from '../../shared/log';
import { buildServiceImage, DOCKER_SETUP_TIMEOUT_MS, startDocker, startRegistry, type DockerDaemon, type Registry } from '../helpers/docker';
import { waitFor } from '../helpers/wait';

const SECRET = `s3cret-${process.pid}-${Date.now()}`;
const logLines: string[] = [];
const log = createLogger({ level: 'debug', write: (line) => void logLines.push(line) });
const reports: RuntimeReport[] = [];
const numbers: Record<string, number | string> = {};

let daemon: DockerDaemon;
let registry: Registry;
let runDir: string;
let secretsDir: string;
let runtime: DeploymentRuntime;
const image: Record<'v1' | 'v2' | 'v3' | 'bad', string> = { v1: '', v2: '', v3: '', bad: '' };

const makeRuntime = () =>
  dockerRuntime({
    dockerHost: daemon.host,
    runDir,
    secretsDir,
    deadlineSeconds: 8,
    environments: ['dev'],
    dockerConfig: join(runDir, 'no-docker-config.json'),
    reconcileMs: 1000,
    followUpMs: 200,
    graceSeconds: 2,
    ingress: { drainTimeoutMs: 3000 },
  })((r) => void reports.push(r), log);

beforeAll(async () => {
  [daemon, registry] = await Promise.all([startDocker(), startRegistry()]);
  for (const [key, tag, healthy] of [
    ['v1', '1.0.0', true],
    ['v2', '2.0.0', true],
    ['v3', '3.0.0', true],
    ['bad', '4.0.0', false],
  ] as const) {
    image[key] = await buildServiceImage(daemon, registry, { name: 'web', tag, body: `${key}\n`, healthy });
  }
  // Only the registry has them: the runtime pulls.
  for (const ref of Object.values(image)) await daemon.docker.getImage(ref).remove();
  runDir = mkdtempSync(join(tmpdir(), 'tether-docker-runtime-'));
  secretsDir = join(runDir, 'secrets');
  mkdirSync(join(secretsDir, 'db'), { recursive: true });
  writeFileSync(join(secretsDir, 'db', 'password'), `${SECRET}\n`);
  runtime = makeRuntime();
}, DOCKER_SETUP_TIMEOUT_MS);

afterAll(async () => {
  runtime?.close();
  if (runDir) {
    // The runtime leaves HAProxy serving for the next tether; the test owns it and stops it.
    const ingress = await adoptIngress({ environment: 'dev', listen: '127.0.0.1:0', runDir: join(runDir, 'dev'), log: silentLogger }).catch(() => undefined);
    await ingress?.stop();
    rmSync(runDir, { recursive: true, force: true });
  }
  if (daemon) {
    // The environment's network is a Linux bridge that outlives its daemon: removed first, after its containers.
    for (const c of await containers()) await daemon.docker.getContainer(c.Id).remove({ force: true });
    const networks = await daemon.docker.listNetworks({ filters: { label: ['tether.env'] } });
    for (const n of networks) await daemon.docker.getNetwork(n.Id).remove();
  }
  await Promise.allSettled([daemon?.stop(), registry?.stop()]);
  console.log(`docker runtime numbers: ${JSON.stringify(numbers)}`);
}, 60_000);

const runOf = (key: keyof typeof image, extra: Partial<RevisionRun> = {}): RevisionRun => ({
  revision: `v${image[key].slice(image[key].lastIndexOf(':') + 1)}`,
  image: image[key],
  port: 8080,
  env: { GREETING: 'hello' },
  secrets: [{ path: 'db/password', env: 'DB_PASSWORD' }],
  ...extra,
});

let rollout = 0;
function target(run: RevisionRun, replicas: number, canary?: { stable: RevisionRun; weight: number }): RolloutTarget {
  return {
    service: 'web',
    environment: 'dev',
    rollout: ++rollout,
    revision: run.revision,
    image: run.image,
    replicas,
    ready: 0,
    canary: canary && { stableRevision: canary.stable.revision, weight: canary.weight },
    run,
    stableRun: canary?.stable,
  };
}

const latest = (n: number) => reports.filter((r) => r.rollout === n).at(-1);
const endpoint = () => waitFor(() => runtime.endpointOf!('dev'), 'the ingress endpoint');

function get(url: string, host: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { host }, agent: false, timeout: 5000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: body.trim() }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

/** Requests in two loops until stopped: how many, which bodies, and every answer that was not a 200. */
function load(url: string) {
  let stopped = false;
  const seen = { total: 0, bodies: new Map<string, number>(), failures: [] as string[] };
  const loop = async () => {
    while (!stopped) {
      try {
        const r = await get(url, 'web');
        seen.total++;
        if (r.status === 200) seen.bodies.set(r.body, (seen.bodies.get(r.body) ?? 0) + 1);
        else seen.failures.push(`${r.status} ${r.body}`);
      } catch (err) {
        seen.failures.push(String(err));
      }
    }
  };
  const loops = [loop(), loop()];
  return async () => {
    stopped = true;
    await Promise.all(loops);
    return seen;
  };
}

async function bodies(url: string, count: number): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (let i = 0; i < count; i++) {
    const r = await get(url, 'web');
    const key = r.status === 200 ? r.body : `HTTP ${r.status}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return counts;
}

const containers = () => daemon.docker.listContainers({ all: true, filters: { label: ['tether.env=dev', 'tether.service=web'] } });
const revisionsRunning = async () => (await containers()).map((c) => c.Labels['tether.revision']).sort();

describe('the docker runtime', () => {
  let url: string;

  it('runs the replicas of an apply and routes them once ready, with env and secrets', async () => {
    const started = Date.now();
    const t = target(runOf('v1', { health: { path: '/', intervalSeconds: 1, timeoutSeconds: 2, retries: 2 } }), 2);
    runtime.apply(t);
    expect(reports).toHaveLength(0); // reports come after the API answered
    await waitFor(() => latest(t.rollout)?.ready === 2, 'both replicas ready', 30_000, 50);
    numbers.applyToReadyMs = Date.now() - started;
    url = await endpoint();
    expect(await bodies(url, 4)).toEqual(new Map([['v1', 4]]));
    expect(latest(t.rollout)).toMatchObject({ state: 'progressing', readyByRevision: { 'v1.0.0': 2 } });

    const listed = await containers();
    expect(listed).toHaveLength(2);
    const info = await daemon.docker.getContainer(listed[0]!.Id).inspect();
    expect(info.Config.Labels).toMatchObject({ 'tether.env': 'dev', 'tether.service': 'web', 'tether.revision': 'v1.0.0' });
    expect(info.HostConfig).toMatchObject({ Init: true, RestartPolicy: { Name: 'on-failure' } });
    expect(info.Config.Env).toEqual(expect.arrayContaining(['GREETING=hello', `DB_PASSWORD=${SECRET}`]));
    expect(info.Config.Healthcheck?.Test).toEqual(['CMD', '/bin/busybox', 'wget', '-q', '-O-', 'http://127.0.0.1:8080/']);
    expect(info.NetworkSettings.Ports['8080/tcp']?.[0]?.HostIp).toBe('127.0.0.1');
    expect(Object.keys(info.NetworkSettings.Networks)).toEqual(['tether-dev']);
    expect(await get(url, 'nothing-here')).toMatchObject({ status: 404 });
  }, 60_000);

  it('rolls to a new revision start-first: every request answered', async () => {
    const stop = load(url);
    const t = target(runOf('v2'), 2);
    runtime.apply(t);
    await waitFor(() => latest(t.rollout)?.ready === 2, 'the new replicas ready', 30_000, 50);
    await waitFor(async () => (await revisionsRunning()).join() === 'v2.0.0,v2.0.0', 'the old replicas gone', 30_000, 100);
    await waitFor(async () => (await get(url, 'web')).body === 'v2', 'v2 answering');
    const seen = await stop();
    numbers.rollingRequests = seen.total;
    numbers.rollingNon200 = seen.failures.length;
    expect(seen.failures).toEqual([]);
    expect(seen.total).toBeGreaterThan(20);
    expect(await bodies(url, 10)).toEqual(new Map([['v2', 10]]));
  }, 60_000);

  it('sends a canary exactly its weight, halts it, and promotes it', async () => {
    const t = target(runOf('v3'), 1, { stable: runOf('v2'), weight: 20 });
    runtime.apply(t);
    await waitFor(() => latest(t.rollout)?.ready === 1, 'the canary ready', 30_000, 50);
    expect(latest(t.rollout)?.readyByRevision).toEqual({ 'v2.0.0': 2, 'v3.0.0': 1 });
    expect(await revisionsRunning()).toEqual(['v2.0.0', 'v2.0.0', 'v3.0.0']);
    await waitFor(async () => (await bodies(url, 10)).get('v3') === 2, 'the canary routed');
    const measured = await bodies(url, 300);
    numbers.canaryShare = (measured.get('v3') ?? 0) / 300;
    // HAProxy's weights give 1 request in 5 per cycle; the first cycle after a server joins may be off by one.
    expect(Math.abs(measured.get('v3')! - 60)).toBeLessThanOrEqual(2);
    expect(measured.get('v2')! + measured.get('v3')!).toBe(300);

    runtime.setCanaryWeight('web', 'dev', 0);
    await waitFor(async () => (await bodies(url, 20)).get('v2') === 20, 'the halted canary out of traffic');
    expect(await revisionsRunning()).toEqual(['v2.0.0', 'v2.0.0', 'v3.0.0']); // halted, still deployed

    runtime.setCanaryWeight('web', 'dev', 100);
    await waitFor(async () => (await revisionsRunning()).join() === 'v3.0.0', 'the old stable replicas gone', 30_000, 100);
    expect(await bodies(url, 10)).toEqual(new Map([['v3', 10]]));
  }, 90_000);

  it('fails a revision that never gets healthy and leaves the previous one serving', async () => {
    const stop = load(url);
    const t = target(runOf('bad'), 1);
    runtime.apply(t);
    const failed = await waitFor(() => latest(t.rollout)?.state === 'failed' && latest(t.rollout), 'the rollout failed', 30_000, 100);
    const seen = await stop();
    expect(failed.ready).toBe(0);
    expect(failed.message).toMatch(/v4\.0\.0 did not become ready within 8 s: 0 of 1 replicas ready/);
    expect(failed.message).toMatch(/health check said: .*404/s);
    numbers.failedMessage = failed.message!.slice(0, 300);
    expect(seen.failures).toEqual([]);
    expect([...seen.bodies.keys()]).toEqual(['v3']);

    // Rollback is a rollout of the earlier revision: already running, so the failed replica goes.
    const back = target(runOf('v3'), 1);
    runtime.apply(back);
    await waitFor(() => latest(back.rollout)?.ready === 1 && latest(back.rollout)?.state === 'progressing', 'the rollback reported');
    await waitFor(async () => (await revisionsRunning()).join() === 'v3.0.0', 'the failed replica gone', 30_000, 100);
  }, 60_000);

  it('repairs drift: a replica removed by hand comes back', async () => {
    const t = target(runOf('v3'), 2);
    runtime.apply(t);
    await waitFor(() => latest(t.rollout)?.ready === 2, 'two replicas ready', 30_000, 50);
    const [victim] = await containers();
    const removedAt = Date.now();
    await daemon.docker.getContainer(victim!.Id).remove({ force: true });
    await waitFor(() => latest(t.rollout)?.ready === 1, 'the loss reported', 10_000, 50);
    await waitFor(() => latest(t.rollout)?.ready === 2, 'the replica back', 30_000, 50);
    numbers.driftRepairMs = Date.now() - removedAt;
    expect((await containers()).map((c) => c.Id)).not.toContain(victim!.Id);
    expect(await revisionsRunning()).toEqual(['v3.0.0', 'v3.0.0']);
  }, 60_000);

  it('is adopted by a new runtime on the same engine: no duplicate, no gap', async () => {
    const before = (await containers()).map((c) => c.Id).sort();
    const stop = load(url);
    runtime.close();
    const seenBefore = reports.length;
    runtime = makeRuntime();
    await waitFor(() => reports.length > seenBefore && reports.at(-1)!.ready === 2, 'the new runtime reporting', 20_000, 50);
    expect(reports.at(-1)).toMatchObject({ rollout, ready: 2, state: 'progressing' });
    expect(await endpoint()).toBe(url);
    await new Promise((r) => setTimeout(r, 2500)); // a couple of ticks: nothing may be started or removed
    const seen = await stop();
    expect((await containers()).map((c) => c.Id).sort()).toEqual(before);
    expect(seen.failures).toEqual([]);
    expect(seen.total).toBeGreaterThan(10);
  }, 60_000);

  it('returns the replicas logs, and never logs a secret', async () => {
    const logs = await runtime.logs!('web', 'dev', 10);
    expect(logs.map((l) => l.revision)).toEqual(['v3.0.0', 'v3.0.0']);
    expect(logLines.join('\n')).not.toContain(SECRET);
    const instructions = readFileSync(join(runDir, 'dev', 'runtime.json'), 'utf8');
    expect(instructions).toContain('db/password');
    expect(instructions).not.toContain(SECRET);
  });

  it('removes the containers and the route on delete', async () => {
    runtime.remove('web', 'dev');
    await waitFor(async () => (await containers()).length === 0, 'the containers gone', 30_000, 100);
    await waitFor(async () => (await get(url, 'web')).status === 404, 'the route gone');
  }, 60_000);
});
