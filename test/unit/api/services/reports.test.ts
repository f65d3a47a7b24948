/**
 * What the runtime's reports and answers show in a service's record (docs/http-api.md,
 * deployments): why a rollout failed (`status_message`, kept across a restart, gone with the next
 * rollout), ready replicas per revision (`replicas.by_revision`, for the rollout under way), the
 * environment's ingress (`endpoint`), and the replicas' logs. A runtime of the test's own reports.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createServices, type Services } from '../../../../api/services/services';
import type { DeploymentRuntime, RuntimeReport } from '../../../../api/services/runtime';
import { openStore, type Store } from '../../../../api/store/index';
import type { Principal } from '../../../../api/store/tokens';
import { silentLogger } from '../../../../shared/log';
import { tempDir } from '../../../helpers/stack';

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
  let dir: string;
  let store: Store;
  let runtime: ReturnType<typeof fakeRuntime>;
  let services: Services;
  const open = () => {
    store = openStore(dir);
    services = createServices({ store, runtime, log: silentLogger, now: Date.now });
  };
  const report = (r: Partial<RuntimeReport> & { ready: number }) =>
    services.onReport({ service: 'web', environment: 'dev', rollout: store.services.get('web', 'dev')!.rollout, state: 'progressing', ...r });
  const get = () => services.get(admin, 'dev', 'web');

  beforeEach(() => {
    dir = tempDir();
    runtime = fakeRuntime();
    open();
  });
  afterEach(() => store.close());

  it('a failed rollout says why, keeps saying it after a restart, and forgets it with the next rollout', () => {
    services.apply(admin, 'dev', spec('1.0.0', 2), false);
    expect(get()).not.toHaveProperty('status_message');
    const why = 'replica web-1 is not ready after 300 s: its container exited with code 1\nlast log lines:\nError: PORT is not set';
    report({ ready: 1, state: 'failed', message: why });
    expect(get()).toMatchObject({ status: 'failed', status_message: why });
    // a later report of the same rollout neither revives it nor loses the reason
    report({ ready: 1 });
    expect(get()).toMatchObject({ status: 'failed', status_message: why, replicas: { ready: 1 } });

    store.close();
    open();
    expect(get()).toMatchObject({ status: 'failed', status_message: why });
    expect(services.list(admin, 'dev', 'failed', 10, 0).items[0]).toMatchObject({ status_message: why });

    services.apply(admin, 'dev', spec('1.0.1', 2), false);
    expect(get()).toMatchObject({ status: 'deploying' });
    expect(get()).not.toHaveProperty('status_message');
  });

  it('a failure without a message is still explained, and a long one is cut to what is kept', () => {
    services.apply(admin, 'dev', spec('1.0.0', 3), false);
    report({ ready: 1, state: 'failed' });
    expect(get().status_message).toBe('the runtime gave up on the rollout with 1 of 3 replicas ready');
    services.apply(admin, 'dev', spec('1.0.1', 3), false);
    report({ ready: 0, state: 'failed', message: `image pull failed\n${'x'.repeat(20_000)}` });
    expect(get().status_message).toMatch(/^image pull failed\nx+…$/);
    expect(get().status_message).toHaveLength(8192);
  });

  it('a failed rollout whose replicas all become ready after all is healthy, with no message', () => {
    services.apply(admin, 'dev', spec('1.0.0', 2), false);
    report({ ready: 1, state: 'failed', message: 'too slow' });
    report({ ready: 2 });
    expect(get()).toMatchObject({ status: 'healthy', gitops_sync_status: 'Synced' });
    expect(get()).not.toHaveProperty('status_message');
  });

  it('shows ready replicas per revision during a canary, for the rollout under way only', () => {
    services.apply(admin, 'dev', spec('1.0.0', 2), false);
    expect(get().replicas).toEqual({ desired: 2, ready: 0 }); // nothing reported yet
    report({ ready: 2, readyByRevision: { 'v1.0.0': 2 } });
    services.apply(admin, 'dev', spec('1.1.0', 2, true), false);
    // a new rollout: what was said of the last one is not shown as this one's
    expect(get().replicas).toEqual({ desired: 2, ready: 0 });
    report({ ready: 1, readyByRevision: { 'v1.1.0': 1, 'v1.0.0': 2 } });
    expect(get()).toMatchObject({ canary: { revision: 'v1.1.0', weight: 20 }, replicas: { desired: 2, ready: 1, by_revision: { 'v1.0.0': 2, 'v1.1.0': 1 } } });
    // a report without the breakdown keeps the last one; a report of a stale rollout changes nothing
    report({ ready: 2 });
    services.onReport({ service: 'web', environment: 'dev', rollout: 1, ready: 0, state: 'progressing', readyByRevision: { 'v1.0.0': 0 } });
    expect(get().replicas).toEqual({ desired: 2, ready: 2, by_revision: { 'v1.0.0': 2, 'v1.1.0': 1 } });
    // promotion keeps the rollout: the runtime's next report says the old stable's replicas are gone
    services.promote(admin, 'dev', 'web');
    report({ ready: 2, readyByRevision: { 'v1.1.0': 2 } });
    expect(get().replicas.by_revision).toEqual({ 'v1.1.0': 2 });

    services.remove(admin, 'dev', 'web');
    services.apply(admin, 'dev', spec('1.1.0', 2), false);
    expect(get().replicas).toEqual({ desired: 2, ready: 0 });
  });

  it("shows the environment's ingress as the endpoint where the runtime has one", () => {
    services.apply(admin, 'dev', spec('1.0.0', 1), false);
    services.apply(admin, 'staging', spec('1.0.0', 1), false);
    expect(get()).toMatchObject({ runtime: 'docker', endpoint: 'http://127.0.0.1:18080' });
    expect(services.list(admin, 'dev', undefined, 10, 0).items[0]).toMatchObject({ endpoint: 'http://127.0.0.1:18080' });
    expect(services.get(admin, 'staging', 'web')).not.toHaveProperty('endpoint');
  });

  it("reads the replicas' logs from the runtime; a runtime that cannot is 503 without its internals", async () => {
    services.apply(admin, 'dev', spec('1.0.0', 1), false);
    expect(await services.logs(admin, 'dev', 'web', 2)).toEqual([{ replica: 'tether-dev-web-v1.0.0-1', revision: 'v1.0.0', lines: ['line 4', 'line 5'] }]);
    await expect(services.logs(admin, 'dev', 'nope', 2)).rejects.toMatchObject({ code: 'not_found' });
    runtime.failLogs = true;
    const err = await services.logs(admin, 'dev', 'web', 2).catch((e: Error) => e);
    expect(err).toMatchObject({ code: 'unavailable', status: 503, message: 'the docker runtime could not read the logs of web in dev; try again' });
  });
});
