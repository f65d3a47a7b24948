/** The service repository: one record per service and environment read with its current image, changed only in place of the row as read (stale rollout reports and lost races refused), revisions newest first and deleted with their service, and the deployment audit with its JSON details. */
import { beforeEach, describe, expect, it } from 'vitest';
import { type Store } from '../../../../api/store/index';
import type { Environment, RevisionRow, ServiceRow } from '../../../../api/store/services';
import { storeForEachTest } from '../../../helpers/store';

const t = (hhmm: string) => `2026-01-01T${hhmm}:00.000Z`;

/** A CHECK constraint refusing a row, as either store says it. */
const CHECK = /CHECK constraint/i;

const service = (name: string, over: Partial<ServiceRow> = {}): ServiceRow => ({
  name,
  environment: 'staging',
  status: 'deploying',
  current_revision: 'v1.0.0',
  previous_revision: null,
  desired_replicas: 3,
  ready_replicas: 0,
  sync_status: 'OutOfSync',
  canary_revision: null,
  canary_weight: null,
  rollout: 1,
  last_deployed_at: t('00:00'),
  created_at: t('00:00'),
  status_message: null,
  ...over,
});

const revision = (name: string, rev: string, over: Partial<RevisionRow> = {}): RevisionRow => ({
  service: name,
  environment: 'staging',
  revision: rev,
  image: `registry.example.com/platform/${name}:${rev.slice(1)}`,
  spec: `service:\n  name: ${name}\n`,
  replicas: 3,
  deployed_at: t('00:00'),
  deployed_by: 'ann',
  ...over,
});

describe('service repository', () => {
  const store = storeForEachTest();

  /** A new service and its current revision, written together as the deployment service does. */
  const deploy = (row: ServiceRow, rev: Partial<RevisionRow> = {}) =>
    store.transaction(async (tx) => {
      expect(await tx.services.put(row, undefined)).toBe(true);
      await tx.services.putRevision(revision(row.name, row.current_revision, { environment: row.environment, ...rev }));
    });
  const read = async (name: string, env: Environment = 'staging') => (await store.services.get(name, env))!;

  it('reads a service with the image of its current revision', async () => {
    await deploy(service('web'));
    expect(await store.services.get('web', 'staging')).toEqual({
      ...service('web'),
      current_image: 'registry.example.com/platform/web:1.0.0',
      current_image_of: 'v1.0.0',
    });
    expect(await store.services.get('web', 'prod')).toBeUndefined(); // per environment
    expect(await store.services.get('api', 'staging')).toBeUndefined();
  });

  it('updates the record in place of what was read, keeping when it was created', async () => {
    await deploy(service('web'));
    const before = await read('web');
    // what was read (with its image fields) can be written back
    await store.transaction(async (tx) => {
      const next = { ...before, current_revision: 'v1.1.0', previous_revision: 'v1.0.0', rollout: 2, last_deployed_at: t('01:00'), created_at: t('05:00') };
      expect(await tx.services.put(next, before)).toBe(true);
      await tx.services.putRevision(revision('web', 'v1.1.0', { deployed_at: t('01:00') }));
    });
    expect(await store.services.get('web', 'staging')).toMatchObject({
      current_revision: 'v1.1.0',
      previous_revision: 'v1.0.0',
      rollout: 2,
      last_deployed_at: t('01:00'),
      created_at: t('00:00'),
      current_image: 'registry.example.com/platform/web:1.1.0',
    });
    expect((await store.services.list('staging', undefined, 10, 0)).total).toBe(1);
  });

  it('refuses a second new service of the same name and environment, and a write in place of a row that moved on', async () => {
    await deploy(service('web'));
    expect(await store.services.put(service('web', { rollout: 7 }), undefined)).toBe(false); // another request created it first
    const before = await read('web');
    expect(await store.services.put({ ...before, rollout: 2 }, before)).toBe(true);
    // a change decided on what was read before that write loses, and changes nothing
    expect(await store.services.put({ ...before, canary_revision: 'v2.0.0', canary_weight: 10 }, before)).toBe(false);
    expect(await store.services.put({ ...before, status_message: 'x' }, { ...before, rollout: 2, status_message: 'y' })).toBe(false);
    expect(await read('web')).toMatchObject({ rollout: 2, canary_revision: null, canary_weight: null, status_message: null });
    expect(await store.services.put({ ...before, rollout: 3 }, { ...before, environment: 'prod' })).toBe(false); // no such row
  });

  it('refuses a canary weight without a canary revision, and the other way round', async () => {
    await expect(store.services.put(service('web', { canary_revision: 'v2.0.0', canary_weight: null }), undefined)).rejects.toThrow(CHECK);
    await expect(store.services.put(service('web', { canary_revision: null, canary_weight: 10 }), undefined)).rejects.toThrow(CHECK);
    await deploy(service('web'));
    const before = await read('web');
    await expect(store.services.put({ ...before, canary_revision: 'v2.0.0' }, before)).rejects.toThrow(CHECK);
  });

  it('records runtime progress only on the row as it was read: for the rollout under way', async () => {
    await deploy(service('web', { rollout: 2 }));
    const current = await read('web');
    expect(await store.services.progress({ ...current, rollout: 1 }, { ready: 3, status: 'healthy', sync: 'Synced' })).toBe(false); // a stale rollout
    expect(await store.services.get('web', 'staging')).toMatchObject({ ready_replicas: 0, status: 'deploying', sync_status: 'OutOfSync' });
    expect(await store.services.progress(current, { ready: 3, status: 'healthy', sync: 'Synced' })).toBe(true);
    expect(await store.services.get('web', 'staging')).toMatchObject({ ready_replicas: 3, status: 'healthy', sync_status: 'Synced' });
    expect(await store.services.progress({ ...current, environment: 'prod' }, { ready: 1, status: 'healthy', sync: 'Synced' })).toBe(false);
    // a report decided on the row before the last one: it would undo it
    expect(await store.services.progress(current, { ready: 2, status: 'deploying', sync: 'OutOfSync' })).toBe(false);
    expect(await store.services.get('web', 'staging')).toMatchObject({ ready_replicas: 3, status: 'healthy' });
  });

  it('keeps why a rollout failed, and forgets it with the next put', async () => {
    await deploy(service('web'));
    const deploying = await read('web');
    expect(await store.services.progress(deploying, { ready: 1, status: 'failed', sync: 'OutOfSync', message: 'replica web-1 exited with code 1' })).toBe(true);
    const failed = await read('web');
    expect(failed).toMatchObject({ status: 'failed', status_message: 'replica web-1 exited with code 1' });
    expect(await store.services.put(service('web', { rollout: 2 }), failed)).toBe(true);
    const next = await read('web');
    expect(next).toMatchObject({ status: 'deploying', status_message: null });
    await expect(store.services.put(service('web', { status_message: 'x'.repeat(8193) }), next)).rejects.toThrow(CHECK);
  });

  it('lists the services of one environment by name, filtered by status, paged', async () => {
    for (const name of ['web', 'api', 'worker']) await deploy(service(name, { status: name === 'api' ? 'deploying' : 'healthy' }));
    await deploy(service('web', { environment: 'prod' }));
    const names = async (env: Environment, status: ServiceRow['status'] | undefined, limit = 10, offset = 0) => {
      const { items, total } = await store.services.list(env, status, limit, offset);
      return { names: items.map((s) => s.name), total };
    };
    expect(await names('staging', undefined)).toEqual({ names: ['api', 'web', 'worker'], total: 3 });
    expect(await names('staging', 'healthy')).toEqual({ names: ['web', 'worker'], total: 2 });
    expect(await names('staging', undefined, 1, 1)).toEqual({ names: ['web'], total: 3 });
    expect(await names('prod', undefined)).toEqual({ names: ['web'], total: 1 });
    expect(await names('dev', undefined)).toEqual({ names: [], total: 0 });
    expect((await store.services.list('staging', undefined, 10, 0)).items[0]!.current_image).toBe('registry.example.com/platform/api:1.0.0');
    expect((await store.services.deploying()).map((s) => `${s.name}/${s.environment}`).sort()).toEqual(['api/staging', 'web/prod']);
  });

  it('keeps revisions newest first (the greater revision breaking ties), paged, and updates one deployed again', async () => {
    await deploy(service('web'), { deployed_at: t('00:00') });
    await store.services.putRevision(revision('web', 'v1.2.0', { deployed_at: t('01:00') }));
    await store.services.putRevision(revision('web', 'v1.1.0', { deployed_at: t('01:00') }));
    await store.services.putRevision(revision('web', 'v1.3.0', { deployed_at: t('02:00') }));
    const revs = async (limit = 10, offset = 0) => {
      const { items, total } = await store.services.history('web', 'staging', limit, offset);
      return { revs: items.map((r) => r.revision), total };
    };
    expect(await revs()).toEqual({ revs: ['v1.3.0', 'v1.2.0', 'v1.1.0', 'v1.0.0'], total: 4 });
    expect(await revs(2, 1)).toEqual({ revs: ['v1.2.0', 'v1.1.0'], total: 4 });
    // a rollback deploys v1.0.0 again: the same revision row, now the newest
    await store.services.putRevision(revision('web', 'v1.0.0', { deployed_at: t('03:00'), deployed_by: 'bob' }));
    expect(await revs()).toEqual({ revs: ['v1.0.0', 'v1.3.0', 'v1.2.0', 'v1.1.0'], total: 4 });
    expect(await store.services.revision('web', 'staging', 'v1.0.0')).toMatchObject({ deployed_at: t('03:00'), deployed_by: 'bob' });
    expect(await store.services.revision('web', 'prod', 'v1.0.0')).toBeUndefined();
  });

  it('refuses a revision of a service that does not exist', async () => {
    await expect(store.services.putRevision(revision('ghost', 'v1.0.0'))).rejects.toThrow(/FOREIGN KEY constraint/i);
  });

  it('deletes a service once, its revisions with it, and only in its environment', async () => {
    await deploy(service('web'));
    await deploy(service('web', { environment: 'prod' }));
    expect(await store.services.delete('web', 'staging')).toBe(true);
    expect(await store.services.delete('web', 'staging')).toBe(false);
    expect(await store.services.revision('web', 'staging', 'v1.0.0')).toBeUndefined();
    expect((await store.services.history('web', 'staging', 10, 0)).total).toBe(0);
    expect(await store.services.get('web', 'prod')).toBeDefined();
  });

  it('deletes a service as it was read, not one that moved on since', async () => {
    await deploy(service('web'));
    const before = await read('web');
    expect(await store.services.progress(before, { ready: 1, status: 'deploying', sync: 'OutOfSync' })).toBe(true);
    expect(await store.services.delete('web', 'staging', before)).toBe(false);
    expect(await store.services.delete('web', 'staging', await read('web'))).toBe(true);
    expect(await store.services.get('web', 'staging')).toBeUndefined();
  });

  describe('deployment audit', () => {
    beforeEach(async () => {
      await store.services.audit({
        event: 'service.applied',
        service: 'web',
        environment: 'staging',
        revision: 'v1.0.0',
        actor: 'ann',
        at: t('00:01'),
        details: { strategy: 'rolling', replicas: 3, nested: { ok: true, list: [1, 'two'] } },
      });
      await store.services.audit({
        event: 'service.applied',
        service: 'api',
        environment: 'prod',
        revision: 'v2.0.0',
        actor: 'bob',
        at: t('00:02'),
        details: {},
      });
      await store.services.audit({
        event: 'service.rolled_back',
        service: 'web',
        environment: 'staging',
        revision: null,
        actor: 'bob',
        at: t('00:03'),
        details: { to: 'v0.9.0' },
      });
    });
    const events = async (q: Partial<Parameters<Store['services']['auditList']>[0]>) => {
      const { items, total } = await store.services.auditList({ limit: 10, offset: 0, ...q });
      return { events: items.map((e) => `${e.event}:${e.service}`), total };
    };

    it('round-trips details as JSON, newest first', async () => {
      const { items, total } = await store.services.auditList({ limit: 10, offset: 0 });
      expect(total).toBe(3);
      expect(items.map((e) => e.at)).toEqual([t('00:03'), t('00:02'), t('00:01')]);
      expect(items[0]).toMatchObject({ revision: null, details: { to: 'v0.9.0' } });
      expect(items[2]!.details).toEqual({ strategy: 'rolling', replicas: 3, nested: { ok: true, list: [1, 'two'] } });
      expect(items[1]!.details).toEqual({});
    });

    it('filters by service, environment, event, actor and strictly after `since`, and pages', async () => {
      expect((await events({ service: 'web' })).events).toEqual(['service.rolled_back:web', 'service.applied:web']);
      expect((await events({ environment: 'prod' })).events).toEqual(['service.applied:api']);
      expect((await events({ event: 'service.applied' })).events).toEqual(['service.applied:api', 'service.applied:web']);
      expect(await events({ actor: 'bob', service: 'web' })).toEqual({ events: ['service.rolled_back:web'], total: 1 });
      expect((await events({ since: t('00:02') })).events).toEqual(['service.rolled_back:web']);
      expect(await events({ limit: 1, offset: 1 })).toEqual({ events: ['service.applied:api'], total: 3 });
    });
  });
});
