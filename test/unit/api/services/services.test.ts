/** Promoting a canary (docs/http-api.md, Services): only a canary whose rollout is complete, so the promoted service is `healthy`; runtime reports drive the rollout here. */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createServices, type Services } from '../../../../api/services/services';
import type { DeploymentRuntime, RuntimeReport } from '../../../../api/services/runtime';
import { simulatedRuntime } from '../../../../api/services/simulated-runtime';
import type { Principal } from '../../../../api/store/tokens';
import { silentLogger } from '../../../../shared/log';
import { storeForEachTest } from '../../../helpers/store';

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
  `service:\n  name: web\n  image: registry.example.com/platform/web:${tag}\ndeployment:\n  replicas: ${replicas}\n${canary ? '  strategy: canary\n' : ''}`;

/** The 409 `conflict` an ApiError carries, with its message. */
const conflict = (message: string) => expect.objectContaining({ name: 'ApiError', code: 'conflict', status: 409, message });

describe('promoting a canary', () => {
  const store = storeForEachTest();
  let runtime: DeploymentRuntime;
  let deployments: Services;
  // The reports a runtime would send, for the rollout the record is on now.
  const report = async (ready: number, state: RuntimeReport['state'] = 'progressing') =>
    deployments.onReport({ service: 'web', environment: 'dev', rollout: (await store.services.get('web', 'dev'))!.rollout, ready, state });

  beforeEach(async () => {
    // An hour per replica: no report of its own arrives during a test; the test sends them.
    runtime = simulatedRuntime(3_600_000)((r) => void deployments.onReport(r), silentLogger);
    deployments = createServices({ store, runtime, log: silentLogger, now: Date.now });
    await deployments.apply(admin, 'dev', spec('1.0.0', 1), false);
    await report(1);
  });
  afterEach(async () => {
    runtime.close();
    await deployments.idle();
  });

  it('refuses a canary whose rollout failed, by promote and by weight 100, and changes nothing', async () => {
    await deployments.apply(admin, 'dev', spec('2.0.0', 3, true), false);
    await report(1, 'failed');
    const before = await deployments.get(admin, 'dev', 'web');
    const expected = 'canary v2.0.0 of web in dev failed to roll out (1 of 3 replicas ready); roll back or apply again';
    await expect(deployments.promote(admin, 'dev', 'web')).rejects.toThrow(conflict(expected));
    await expect(deployments.setWeight(admin, 'dev', 'web', 100)).rejects.toThrow(conflict(expected));
    expect(await deployments.get(admin, 'dev', 'web')).toEqual(before);
  });

  it('refuses a canary that lost replicas after it was ready, until they are back', async () => {
    await deployments.apply(admin, 'dev', spec('2.0.0', 3, true), false);
    await report(3);
    await report(2);
    expect((await deployments.get(admin, 'dev', 'web')).status).toBe('degraded');
    await expect(deployments.promote(admin, 'dev', 'web')).rejects.toThrow(
      conflict('canary v2.0.0 of web in dev has 2 of 3 replicas ready; promote it once all are ready'),
    );
    await report(3);
    expect(await deployments.promote(admin, 'dev', 'web')).toMatchObject({ status: 'healthy', current_revision: 'v2.0.0' });
  });

  it('a canary of no replicas has nothing to wait for: promoted at once, healthy and synced', async () => {
    await deployments.apply(admin, 'dev', spec('2.0.0', 0, true), false);
    expect(await deployments.promote(admin, 'dev', 'web')).toMatchObject({ status: 'healthy', replicas: { desired: 0, ready: 0 } });
    expect(await deployments.get(admin, 'dev', 'web')).toMatchObject({ status: 'healthy', gitops_sync_status: 'Synced', previous_revision: 'v1.0.0' });
  });
});
