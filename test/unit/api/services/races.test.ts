/**
 * Changes to one service made at once (by requests, peers and the runtime's reports): each is made
 * in place of the row as it read it, so none is lost to another made in between; one that keeps
 * losing gives up with 409 and writes nothing.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MAX_ATTEMPTS } from '../../../../api/services/records';
import { createServices, type Services } from '../../../../api/services/services';
import type { DeploymentRuntime, RolloutTarget } from '../../../../api/services/runtime';
import type { Store } from '../../../../api/store/index';
import type { ServiceRepo } from '../../../../api/store/services';
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

const spec = (tag: string, replicas = 1, canary = false) =>
  `service:\n  name: web\n  image: registry.example.com/platform/web:${tag}\ndeployment:\n  replicas: ${replicas}\n${canary ? '  strategy: canary\n' : ''}`;

/** A point a change stops at (`reached`) until the test opens it; `waiting` resolves once a change is there. */
function gate() {
  let arrived!: () => void;
  let open!: () => void;
  const waiting = new Promise<void>((resolve) => (arrived = resolve));
  const opened = new Promise<void>((resolve) => (open = resolve));
  return {
    waiting,
    open,
    reached: () => {
      arrived();
      return opened;
    },
  };
}

/** `store` with some of its properties replaced. */
const overriding = (store: Store, replaced: Partial<Store>): Store =>
  new Proxy(store, { get: (target, key) => (key in replaced ? replaced[key as keyof Store] : Reflect.get(target, key)) });

/** A runtime that runs nothing and remembers what it was told, in order. */
function recordingRuntime(): DeploymentRuntime & { applied: RolloutTarget[]; weights: number[] } {
  const applied: RolloutTarget[] = [];
  const weights: number[] = [];
  return {
    applied,
    weights,
    nameOf: () => 'simulated',
    apply: (t) => void applied.push(t),
    setCanaryWeight: (_s, _e, w) => void weights.push(w),
    remove() {},
    close() {},
  };
}

describe('changes to one service made at once', () => {
  const store = storeForEachTest();
  let runtime: ReturnType<typeof recordingRuntime>;
  let services: Services;

  beforeEach(async () => {
    runtime = recordingRuntime();
    services = createServices({ store, runtime, log: silentLogger, now: Date.now });
    await services.apply(admin, 'dev', spec('1.0.0'), false);
  });
  afterEach(() => services.idle());

  it('applies made at once all take effect, each its own rollout, and the runtime is told the last one last', async () => {
    const tags = ['1.1.0', '1.2.0', '1.3.0', '1.4.0'];
    await Promise.all(tags.map((tag) => services.apply(admin, 'dev', spec(tag), false)));
    const row = (await store.services.get('web', 'dev'))!;
    expect(row.rollout).toBe(5);
    expect((await store.services.history('web', 'dev', 10, 0)).total).toBe(5);
    const applied = await store.services.auditList({ event: 'service.applied', limit: 10, offset: 0 });
    expect(applied.total).toBe(5);
    // each apply saw the one before it: the chain of previous revisions is the order they committed in
    const order = applied.items.map((e) => e.revision).reverse();
    expect(new Set(order).size).toBe(5);
    expect(row.current_revision).toBe(order[4]);
    expect(row.previous_revision).toBe(order[3]);
    expect(runtime.applied.map((t) => t.rollout)).toEqual([1, 2, 3, 4, 5]);
    expect(runtime.applied.at(-1)).toMatchObject({ revision: row.current_revision });
  });

  it('a new apply and a canary weight made at once: the weight is never written over the new rollout', async () => {
    await services.apply(admin, 'dev', spec('2.0.0', 1, true), false);
    const [applied, weighted] = await Promise.allSettled([services.apply(admin, 'dev', spec('3.0.0'), false), services.setWeight(admin, 'dev', 'web', 50)]);
    expect(applied.status).toBe('fulfilled');
    expect(await store.services.get('web', 'dev')).toMatchObject({ rollout: 3, current_revision: 'v3.0.0', canary_revision: null, canary_weight: null });
    // the weight went in before the apply, or found no canary any more (409)
    if (weighted.status === 'rejected') expect(weighted.reason).toMatchObject({ code: 'conflict', message: 'web in dev has no canary deployed' });
  });

  it('a promotion decided before a report came in is decided again on the reported row: the report is not lost', async () => {
    await services.apply(admin, 'dev', spec('2.0.0', 2, true), false);
    await services.onReport({ service: 'web', environment: 'dev', rollout: 2, ready: 2, state: 'progressing' });
    // the promotion reads the canary with both replicas ready, and writes only once the report is in
    const write = gate();
    const transaction: Store['transaction'] = async (fn) => (await write.reached(), store.transaction(fn));
    const slow = createServices({ store: overriding(store, { transaction }), runtime, log: silentLogger, now: Date.now });
    const promoting = slow.promote(admin, 'dev', 'web');
    await write.waiting;
    await services.onReport({ service: 'web', environment: 'dev', rollout: 2, ready: 1, state: 'progressing' });
    write.open();
    await expect(promoting).rejects.toMatchObject({
      code: 'conflict',
      message: 'canary v2.0.0 of web in dev has 1 of 2 replicas ready; promote it once all are ready',
    });
    expect(await store.services.get('web', 'dev')).toMatchObject({
      current_revision: 'v1.0.0',
      canary_revision: 'v2.0.0',
      ready_replicas: 1,
      status: 'degraded',
    });
  });

  it('a report decided before a new rollout committed is not recorded on the new rollout', async () => {
    // the report reads rollout 1, and writes only once rollout 2 is in
    const write = gate();
    const progress: ServiceRepo['progress'] = async (...args) => (await write.reached(), store.services.progress(...args));
    const slow = createServices({ store: overriding(store, { services: { ...store.services, progress } }), runtime, log: silentLogger, now: Date.now });
    const reporting = slow.onReport({ service: 'web', environment: 'dev', rollout: 1, ready: 1, state: 'progressing' });
    await write.waiting;
    await services.apply(admin, 'dev', spec('2.0.0', 3), false);
    write.open();
    await reporting;
    expect(await store.services.get('web', 'dev')).toMatchObject({ rollout: 2, current_revision: 'v2.0.0', status: 'deploying', ready_replicas: 0 });
  });

  it(`a change that loses the race ${MAX_ATTEMPTS} times in a row gives up with 409 and writes nothing`, async () => {
    // Every write finds the row changed since it was read, as if other peers always came first.
    const transaction: Store['transaction'] = (fn) => store.transaction((tx) => fn({ ...tx, services: { ...tx.services, put: async () => false } }));
    const losing = createServices({ store: overriding(store, { transaction }), runtime, log: silentLogger, now: Date.now });
    await expect(losing.apply(admin, 'dev', spec('1.1.0'), false)).rejects.toMatchObject({
      code: 'conflict',
      status: 409,
      message: `web in dev was changed by another request since it was read, ${MAX_ATTEMPTS} times in a row; try again`,
    });
    expect(await store.services.get('web', 'dev')).toMatchObject({ rollout: 1, current_revision: 'v1.0.0' });
    expect((await store.services.auditList({ limit: 10, offset: 0 })).total).toBe(1);
    expect(runtime.applied).toHaveLength(1);
  });
});
