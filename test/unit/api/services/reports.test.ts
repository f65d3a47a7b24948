/**
 * What the runtime's reports and answers show in a service's record (docs/http-api.md,
 * deployments): why a rollout failed (`status_message`, kept across a restart, gone with the next
 * rollout), ready replicas per revision (`replicas.by_revision`, for the rollout under way), the
 * environment's ingress (`endpoint`), and the replicas' logs. A runtime of the test's own reports.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createServices, type Services } from '../../../../api/services/services';
import type { DeploymentRuntime, RuntimeReport } from '../../../../api/services/runtime';
import { openStore, type Store, type StoreLocation } from '../../../../api/store/index';
import type { Principal } from '../../../../api/store/tokens';
import { createLogger, silentLogger } from '../../../../shared/log';
import { freshStoreLocation } from '../../../helpers/store';

const admin: Principal = {
  token_id: 'tok_1',
  username: 'ann@example.com',
  role: 'administrator',
  kind: 'human',
  scopes: ['*'],
  tenants: [],
  created_at: '2026-01-01T00:00:00.000Z',
  expires_at: null,
  revoked_at: null,
};

const spec = (tag: string, replicas: number, canary = false) =>
  `service:\n  name: web\n  image: registry.example.com/platform/web:${tag}\ndeployment:\n  replicas: ${replicas}\n${canary ? '  strategy: canary\n  canary: {weight: 20}\n' : ''}`;

/** A runtime that runs nothing by itself: the test sends its reports; it has an ingress in dev and logs. */
function fakeRuntime(): DeploymentRuntime & { failLogs: boolean } {
  return {
    failLogs: false,
    nameOf: () => 'docker',
    endpointOf: (env) => (env === 'dev' ? 'http://127.0.0.1:18080' : undefined),
    async logs(service, _env, lines) {
      if (this.failLogs) throw new Error('connect ENOENT /var/run/docker.sock');
      const all = Array.from({ length: 5 }, (_, i) => `line ${i + 1}`);
      return [{ replica: `tether-dev-${service}-v1.0.0-1`, revision: 'v1.0.0', lines: all.slice(-lines) }];
    },
    apply() {},
    setCanaryWeight() {},
    remove() {},
    close() {},
  };
}

describe('what the runtime reports, in the service record', () => {
  let location: StoreLocation;
  let store: Store;
  let runtime: ReturnType<typeof fakeRuntime>;
  let services: Services;
  const open = async () => {
    store = await openStore(location);
    services = createServices({ store, runtime, log: silentLogger, now: Date.now });
  };
  const report = async (r: Partial<RuntimeReport> & { ready: number }) =>
    services.onReport({ service: 'web', environment: 'dev', rollout: (await store.services.get('web', 'dev'))!.rollout, state: 'progressing', ...r });
  const get = () => services.get(admin, 'dev', 'web');

  beforeEach(async () => {
    location = await freshStoreLocation();
    runtime = fakeRuntime();
    await open();
  });
  afterEach(() => store.close());

  it('a failed rollout says why, keeps saying it after a restart, and forgets it with the next rollout', async () => {
    await services.apply(admin, 'dev', spec('1.0.0', 2), false);
    expect(await get()).not.toHaveProperty('status_message');
    const why = 'replica web-1 is not ready after 300 s: its container exited with code 1\nlast log lines:\nError: PORT is not set';
    await report({ ready: 1, state: 'failed', message: why });
    expect(await get()).toMatchObject({ status: 'failed', status_message: why });
    // a later report of the same rollout neither revives it nor loses the reason
    await report({ ready: 1 });
    expect(await get()).toMatchObject({ status: 'failed', status_message: why, replicas: { ready: 1 } });

    await store.close();
    await open();
    expect(await get()).toMatchObject({ status: 'failed', status_message: why });
    expect((await services.list(admin, 'dev', 'failed', 10, 0)).items[0]).toMatchObject({ status_message: why });

    await services.apply(admin, 'dev', spec('1.0.1', 2), false);
    expect(await get()).toMatchObject({ status: 'deploying' });
    expect(await get()).not.toHaveProperty('status_message');
  });

  it('a failure without a message is still explained, and a long one is cut to what is kept', async () => {
    await services.apply(admin, 'dev', spec('1.0.0', 3), false);
    await report({ ready: 1, state: 'failed' });
    expect((await get()).status_message).toBe('the runtime gave up on the rollout with 1 of 3 replicas ready');
    await services.apply(admin, 'dev', spec('1.0.1', 3), false);
    await report({ ready: 0, state: 'failed', message: `image pull failed\n${'x'.repeat(20_000)}` });
    expect((await get()).status_message).toMatch(/^image pull failed\nx+…$/);
    expect((await get()).status_message).toHaveLength(8192);
  });

  it('a failed rollout whose replicas all become ready after all is healthy, with no message', async () => {
    await services.apply(admin, 'dev', spec('1.0.0', 2), false);
    await report({ ready: 1, state: 'failed', message: 'too slow' });
    await report({ ready: 2 });
    expect(await get()).toMatchObject({ status: 'healthy', gitops_sync_status: 'Synced' });
    expect(await get()).not.toHaveProperty('status_message');
  });

  it('shows ready replicas per revision during a canary, for the rollout under way only', async () => {
    await services.apply(admin, 'dev', spec('1.0.0', 2), false);
    expect((await get()).replicas).toEqual({ desired: 2, ready: 0 }); // nothing reported yet
    await report({ ready: 2, readyByRevision: { 'v1.0.0': 2 } });
    await services.apply(admin, 'dev', spec('1.1.0', 2, true), false);
    // a new rollout: what was said of the last one is not shown as this one's
    expect((await get()).replicas).toEqual({ desired: 2, ready: 0 });
    await report({ ready: 1, readyByRevision: { 'v1.1.0': 1, 'v1.0.0': 2 } });
    expect(await get()).toMatchObject({
      canary: { revision: 'v1.1.0', weight: 20 },
      replicas: { desired: 2, ready: 1, by_revision: { 'v1.0.0': 2, 'v1.1.0': 1 } },
    });
    // a report without the breakdown keeps the last one; a report of a stale rollout changes nothing
    await report({ ready: 2 });
    await services.onReport({ service: 'web', environment: 'dev', rollout: 1, ready: 0, state: 'progressing', readyByRevision: { 'v1.0.0': 0 } });
    expect((await get()).replicas).toEqual({ desired: 2, ready: 2, by_revision: { 'v1.0.0': 2, 'v1.1.0': 1 } });
    // promotion keeps the rollout: the runtime's next report says the old stable's replicas are gone
    await services.promote(admin, 'dev', 'web');
    await report({ ready: 2, readyByRevision: { 'v1.1.0': 2 } });
    expect((await get()).replicas.by_revision).toEqual({ 'v1.1.0': 2 });

    await services.remove(admin, 'dev', 'web');
    await services.apply(admin, 'dev', spec('1.1.0', 2), false);
    expect((await get()).replicas).toEqual({ desired: 2, ready: 0 });
  });

  it('records reports handed over at once in the order the runtime sent them, ignoring the stale ones among them', async () => {
    await services.apply(admin, 'dev', spec('1.0.0', 3), false);
    const { rollout } = (await store.services.get('web', 'dev'))!;
    const sent = (ready: number, of = rollout) => services.onReport({ service: 'web', environment: 'dev', rollout: of, ready, state: 'progressing' });
    // not awaited one by one: a runtime's timers and events do not wait either
    const taken = [sent(1), sent(2), sent(0, rollout - 1), sent(3), sent(2), sent(3, rollout - 1)];
    await services.idle();
    await expect(Promise.all(taken)).resolves.toHaveLength(6);
    // deploying, deploying, healthy once all were ready, then degraded by the last one
    expect(await get()).toMatchObject({ status: 'degraded', replicas: { desired: 3, ready: 2 }, gitops_sync_status: 'OutOfSync' });
  });

  it('a report that cannot be recorded is logged, never thrown', async () => {
    const lines: string[] = [];
    const logged = createServices({ store, runtime, log: createLogger({ level: 'warn', write: (l) => lines.push(l) }), now: Date.now });
    await logged.apply(admin, 'dev', spec('1.0.0', 1), false);
    await store.close();
    await expect(logged.onReport({ service: 'web', environment: 'dev', rollout: 1, ready: 1, state: 'progressing' })).resolves.toBeUndefined();
    expect(lines.map((l) => JSON.parse(l) as object)).toEqual([
      expect.objectContaining({ level: 'error', msg: 'a runtime report was not recorded', service: 'web', environment: 'dev' }),
    ]);
    await open(); // for afterEach
  });

  it("shows the environment's ingress as the endpoint where the runtime has one", async () => {
    await services.apply(admin, 'dev', spec('1.0.0', 1), false);
    await services.apply(admin, 'staging', spec('1.0.0', 1), false);
    expect(await get()).toMatchObject({ runtime: 'docker', endpoint: 'http://127.0.0.1:18080' });
    expect((await services.list(admin, 'dev', undefined, 10, 0)).items[0]).toMatchObject({ endpoint: 'http://127.0.0.1:18080' });
    expect(await services.get(admin, 'staging', 'web')).not.toHaveProperty('endpoint');
  });

  it("reads the replicas' logs from the runtime; a runtime that cannot is 503 without its internals", async () => {
    await services.apply(admin, 'dev', spec('1.0.0', 1), false);
    expect(await services.logs(admin, 'dev', 'web', 2)).toEqual([{ replica: 'tether-dev-web-v1.0.0-1', revision: 'v1.0.0', lines: ['line 4', 'line 5'] }]);
    await expect(services.logs(admin, 'dev', 'nope', 2)).rejects.toMatchObject({ code: 'not_found' });
    runtime.failLogs = true;
    const err = await services.logs(admin, 'dev', 'web', 2).catch((e: Error) => e);
    expect(err).toMatchObject({ code: 'unavailable', status: 503, message: 'the docker runtime could not read the logs of web in dev; try again' });
  });
});
