/**
 * Deployments that run, through the whole product (docs/deployments.md): a real `tether server`
 * whose dev environment runs on a Docker Engine the test starts, images built in the test and
 * pulled from a registry on loopback, HAProxy as the ingress; driven through the HTTP API as a
 * user would (apply, canary, halt, promote, rollback, a failing revision, logs, delete, and a
 * server restart that adopts what runs). Every response is checked against the OpenAPI document.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adoptIngress } from '../../api/services/docker/ingress';
import { silentLogger } from '../../shared/log';
import { buildServiceImage, DOCKER_SETUP_TIMEOUT_MS, startDocker, startRegistry, type DockerDaemon, type Registry } from '../helpers/docker';
import { client, type Client } from '../helpers/http';
import { get, load, tally } from '../helpers/ingress';
import { startServerProcess, type Proc } from '../helpers/processes';
import { tempDir } from '../helpers/stack';
import { waitFor } from '../helpers/wait';

const SECRET = `pw-${process.pid}-${Date.now()}`;
let daemon: DockerDaemon;
let registry: Registry;
let dataDir: string;
let server: { proc: Proc; url: string; port: number };
let admin: Client;
const image: Record<'v1' | 'v11' | 'bad', string> = { v1: '', v11: '', bad: '' };

function spec(ref: string, o: { replicas?: number; canary?: number; healthPath?: string } = {}): string {
  return [
    'service:',
    '  name: web',
    `  image: ${ref}`,
    '  port: 8080',
    'deployment:',
    `  replicas: ${o.replicas ?? 2}`,
    ...(o.canary !== undefined ? ['  strategy: canary', '  canary:', `    weight: ${o.canary}`] : []),
    `  health: {path: ${o.healthPath ?? '/'}, interval_seconds: 1, timeout_seconds: 1, retries: 2}`,
    'secrets:',
    '  vault:',
    '    - path: db/password',
    '      env: DB_PASSWORD',
    'config:',
    '  env:',
    '    GREETING: hello',
    '',
  ].join('\n');
}

const apply = (yaml: string) => admin.raw('POST', '/v1/services?env=dev', yaml, { 'content-type': 'application/yaml' });
const record = async () => (await admin.get('/v1/services/web?env=dev')).body.data;

/** Waits until the service is healthy and Synced (every replica of what was applied is ready). */
async function settled(): Promise<Record<string, unknown>> {
  return waitFor(
    async () => {
      const r = await record();
      return r.status === 'healthy' && r.gitops_sync_status === 'Synced' ? r : undefined;
    },
    'the service healthy and Synced',
    60_000,
    200,
  );
}

async function startServer(): Promise<void> {
  server = await startServerProcess(dataDir, {
    DOCKER_HOST: daemon.host,
    TETHER_DEPLOY_RUNTIME_DEV: 'docker',
    TETHER_ROLLOUT_DEADLINE_SECONDS: '8',
    TETHER_SECRETS_DIR: join(dataDir, 'secrets'),
    HOME: join(dataDir, 'home'), // no ~/.docker/config.json of the machine's
  });
  admin = client(server.url, readFileSync(join(dataDir, 'admin.token'), 'utf8').trim());
}

async function webContainers(): Promise<string[]> {
  const list = await daemon.docker.listContainers({ all: true, filters: { label: ['tether.service=web'] } });
  return list.map((c) => c.Id).sort();
}

beforeAll(async () => {
  [daemon, registry] = await Promise.all([startDocker(), startRegistry()]);
  image.v1 = await buildServiceImage(daemon, registry, { name: 'web', tag: '1.0.0', body: 'v1\n' });
  image.v11 = await buildServiceImage(daemon, registry, { name: 'web', tag: '1.1.0', body: 'v1.1\n' });
  image.bad = await buildServiceImage(daemon, registry, { name: 'web', tag: '2.0.0', body: 'bad\n', healthy: false });
  dataDir = tempDir('tether-deploy-docker-');
  mkdirSync(join(dataDir, 'secrets', 'db'), { recursive: true });
  mkdirSync(join(dataDir, 'home'));
  writeFileSync(join(dataDir, 'secrets', 'db', 'password'), `${SECRET}\n`);
  await startServer();
}, DOCKER_SETUP_TIMEOUT_MS);

afterAll(async () => {
  await server?.proc.stop();
  if (dataDir) {
    // tether leaves the ingress serving across its restarts; the test owns it and stops it.
    const ingress = await adoptIngress({ environment: 'dev', listen: '127.0.0.1:0', runDir: join(dataDir, 'ingress', 'dev'), log: silentLogger }).catch(
      () => undefined,
    );
    await ingress?.stop();
  }
  if (daemon) {
    for (const id of await webContainers()) await daemon.docker.getContainer(id).remove({ force: true });
    for (const n of await daemon.docker.listNetworks({ filters: { label: ['tether.env'] } })) await daemon.docker.getNetwork(n.Id).remove();
  }
  await registry?.stop();
  await daemon?.stop();
}, 120_000);

describe('a service on the docker runtime, through the API', () => {
  let endpoint: string;

  it('runs: applied, healthy and Synced, reached through its endpoint by Host, with its config and secret', async () => {
    expect((await apply(spec(image.v1))).status).toBe(200);
    const r = await settled();
    expect(r).toMatchObject({ runtime: 'docker', current_revision: 'v1.0.0', replicas: { desired: 2, ready: 2 } });
    endpoint = r.endpoint as string;
    expect(endpoint).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(await get(endpoint, 'web')).toEqual({ status: 200, body: 'v1\n' });
    expect((await get(endpoint, 'web.example.com')).status).toBe(200);
    expect((await get(endpoint, 'other')).status).toBe(404);
    const ids = await webContainers();
    expect(ids).toHaveLength(2);
    const env = (await daemon.docker.getContainer(ids[0]!).inspect()).Config.Env;
    expect(env).toEqual(expect.arrayContaining(['GREETING=hello', `DB_PASSWORD=${SECRET}`]));
    // The secret is in the containers only: not in the record, nor in the server's logs.
    expect(JSON.stringify(r)).not.toContain(SECRET);
    expect([...server.proc.stdout, ...server.proc.stderr].join('\n')).not.toContain(SECRET);
  }, 90_000);

  it('a canary takes exactly its share at the ingress; halt sends it none; promote sends it all', async () => {
    expect((await apply(spec(image.v11, { canary: 20 }))).status).toBe(200);
    await settled();
    const canary = (await admin.get('/v1/services/web/canary?env=dev')).body.data;
    expect(canary).toMatchObject({ canary_active: true, stable: { revision: 'v1.0.0', weight: 80 }, canary: { revision: 'v1.1.0', weight: 20 } });
    // HAProxy's round robin is exact after the first cycle of a change: measure whole cycles after one.
    await tally(endpoint, 'web', 100);
    const split = await tally(endpoint, 'web', 500);
    expect(split.get('v1.1\n')).toBe(100);
    expect(split.get('v1\n')).toBe(400);
    expect((await admin.post('/v1/services/web/canary/halt?env=dev', {})).status).toBe(200);
    await waitFor(async () => ((await tally(endpoint, 'web', 20)).get('v1.1\n') === undefined ? true : undefined), 'no request to the halted canary', 30_000);
    expect((await admin.post('/v1/services/web/canary/promote?env=dev', {})).status).toBe(200);
    await settled();
    await waitFor(async () => ((await tally(endpoint, 'web', 20)).get('v1.1\n') === 20 ? true : undefined), 'every request to the promoted revision', 30_000);
    // The old stable's replicas go once they drained.
    await waitFor(async () => ((await webContainers()).length === 2 ? true : undefined), 'the old stable replicas gone', 30_000);
  }, 120_000);

  it('a rollback is a rollout of the earlier image, and answers every request meanwhile', async () => {
    const traffic = load(endpoint, 'web', 4, '/');
    try {
      expect((await admin.post('/v1/services/web/rollback?env=dev&revision=v1.0.0', {})).status).toBe(200);
      await settled();
      await waitFor(async () => ((await tally(endpoint, 'web', 10)).get('v1\n') === 10 ? true : undefined), 'the rolled-back revision answering', 30_000);
    } finally {
      await traffic.stop();
    }
    expect([...traffic.statuses.keys()]).toEqual(['200']);
  }, 120_000);

  it('a revision that never becomes healthy fails the service with the reason, and the previous one keeps serving', async () => {
    expect((await apply(spec(image.bad, { healthPath: '/missing' }))).status).toBe(200);
    const failed = await waitFor(
      async () => {
        const r = await record();
        return r.status === 'failed' ? r : undefined;
      },
      'the service failed',
      60_000,
      250,
    );
    expect(failed.status_message).toMatch(/v2\.0\.0 did not become ready within 8 s/);
    expect(failed.status_message).toMatch(/404/); // why: its health check's answer
    expect(await get(endpoint, 'web')).toEqual({ status: 200, body: 'v1\n' });
    const logs = await admin.get('/v1/services/web/logs?env=dev&lines=20');
    expect(logs.status).toBe(200);
    expect(Array.isArray(logs.body.data)).toBe(true);
    // Back to a good revision for what follows.
    expect((await admin.post('/v1/services/web/rollback?env=dev&revision=v1.0.0', {})).status).toBe(200);
    await settled();
  }, 120_000);

  it('a server restart adopts what runs: the same containers, the same ingress, no failed request meanwhile', async () => {
    const before = await webContainers();
    const traffic = load(endpoint, 'web', 2, '/');
    try {
      await server.proc.stop();
      await startServer();
      await settled();
      // The new runtime adopts the running ingress: the same endpoint.
      await waitFor(async () => ((await record()).endpoint === endpoint ? true : undefined), 'the ingress adopted', 30_000, 200);
      // A pass or two of the new runtime: nothing is replaced or duplicated.
      await new Promise((resolve) => setTimeout(resolve, 3000));
    } finally {
      await traffic.stop();
    }
    expect(await webContainers()).toEqual(before);
    expect([...traffic.statuses.keys()]).toEqual(['200']);
  }, 120_000);

  it('delete removes its containers and its route', async () => {
    expect((await admin.del('/v1/services/web?env=dev')).status).toBe(200);
    await waitFor(async () => ((await webContainers()).length === 0 ? true : undefined), 'the containers gone', 30_000);
    await waitFor(async () => ((await get(endpoint, 'web')).status === 404 ? true : undefined), 'the route gone', 30_000);
  }, 90_000);
});
