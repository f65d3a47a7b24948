/** The service repository: one record per service and environment read with its current image, stale rollout reports ignored, revisions newest first and deleted with their service, and the deployment audit with its JSON details. */
import { beforeEach, describe, expect, it } from 'vitest';
import { type Store } from '../../../../api/store/index';
import type { Environment, RevisionRow, ServiceRow } from '../../../../api/store/services';
import { storeForEachTest } from '../../../helpers/store';

const t = (hhmm: string) => `2026-01-01T${hhmm}:00.000Z`;

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

  /** A service and its current revision, written together as the deployment service does. */
  const deploy = (row: ServiceRow, rev: Partial<RevisionRow> = {}) =>
    store.db.transaction(() => {
      store.services.put(row);
      store.services.putRevision(revision(row.name, row.current_revision, { environment: row.environment, ...rev }));
    })();

  it('reads a service with the image of its current revision', () => {
    deploy(service('web'));
    expect(store.services.get('web', 'staging')).toEqual({
      ...service('web'),
      current_image: 'registry.example.com/platform/web:1.0.0',
      current_image_of: 'v1.0.0',
    });
    expect(store.services.get('web', 'prod')).toBeUndefined(); // per environment
    expect(store.services.get('api', 'staging')).toBeUndefined();
  });

  it('updates the record in place on a second put, keeping when it was created', () => {
    deploy(service('web'));
    const read = store.services.get('web', 'staging')!;
    // what was read (with its image fields) can be written back
    store.db.transaction(() => {
      store.services.put({
        ...read,
        current_revision: 'v1.1.0',
        previous_revision: 'v1.0.0',
        rollout: 2,
        last_deployed_at: t('01:00'),
        created_at: t('05:00'),
      });
      store.services.putRevision(revision('web', 'v1.1.0', { deployed_at: t('01:00') }));
    })();
    expect(store.services.get('web', 'staging')).toMatchObject({
      current_revision: 'v1.1.0',
      previous_revision: 'v1.0.0',
      rollout: 2,
      last_deployed_at: t('01:00'),
      created_at: t('00:00'),
      current_image: 'registry.example.com/platform/web:1.1.0',
    });
    expect(store.services.list('staging', undefined, 10, 0).total).toBe(1);
  });

  it('refuses a canary weight without a canary revision, and the other way round', () => {
    expect(() => store.services.put(service('web', { canary_revision: 'v2.0.0', canary_weight: null }))).toThrow(/CHECK/);
    expect(() => store.services.put(service('web', { canary_revision: null, canary_weight: 10 }))).toThrow(/CHECK/);
  });

  it('records runtime progress only for the rollout under way', () => {
    deploy(service('web', { rollout: 2 }));
    expect(store.services.progress('web', 'staging', 1, 3, 'healthy', 'Synced')).toBe(false); // a stale rollout
    expect(store.services.get('web', 'staging')).toMatchObject({ ready_replicas: 0, status: 'deploying', sync_status: 'OutOfSync' });
    expect(store.services.progress('web', 'staging', 2, 3, 'healthy', 'Synced')).toBe(true);
    expect(store.services.get('web', 'staging')).toMatchObject({ ready_replicas: 3, status: 'healthy', sync_status: 'Synced' });
    expect(store.services.progress('web', 'prod', 2, 1, 'healthy', 'Synced')).toBe(false);
  });

  it('keeps why a rollout failed, and forgets it with the next put', () => {
    deploy(service('web'));
    expect(store.services.progress('web', 'staging', 1, 1, 'failed', 'OutOfSync', 'replica web-1 exited with code 1')).toBe(true);
    expect(store.services.get('web', 'staging')).toMatchObject({ status: 'failed', status_message: 'replica web-1 exited with code 1' });
    store.services.put(service('web', { rollout: 2 }));
    expect(store.services.get('web', 'staging')).toMatchObject({ status: 'deploying', status_message: null });
    expect(() => store.services.put(service('web', { status_message: 'x'.repeat(8193) }))).toThrow(/CHECK/);
  });

  it('lists the services of one environment by name, filtered by status, paged', () => {
    for (const name of ['web', 'api', 'worker']) deploy(service(name, { status: name === 'api' ? 'deploying' : 'healthy' }));
    deploy(service('web', { environment: 'prod' }));
    const names = (env: Environment, status: ServiceRow['status'] | undefined, limit = 10, offset = 0) => {
      const { items, total } = store.services.list(env, status, limit, offset);
      return { names: items.map((s) => s.name), total };
    };
    expect(names('staging', undefined)).toEqual({ names: ['api', 'web', 'worker'], total: 3 });
    expect(names('staging', 'healthy')).toEqual({ names: ['web', 'worker'], total: 2 });
    expect(names('staging', undefined, 1, 1)).toEqual({ names: ['web'], total: 3 });
    expect(names('prod', undefined)).toEqual({ names: ['web'], total: 1 });
    expect(names('dev', undefined)).toEqual({ names: [], total: 0 });
    expect(store.services.list('staging', undefined, 10, 0).items[0]!.current_image).toBe('registry.example.com/platform/api:1.0.0');
    expect(
      store.services
        .deploying()
        .map((s) => `${s.name}/${s.environment}`)
        .sort(),
    ).toEqual(['api/staging', 'web/prod']);
  });

  it('keeps revisions newest first (insertion breaking ties), paged, and updates one deployed again', () => {
    deploy(service('web'), { deployed_at: t('00:00') });
    store.services.putRevision(revision('web', 'v1.1.0', { deployed_at: t('01:00') }));
    store.services.putRevision(revision('web', 'v1.2.0', { deployed_at: t('01:00') }));
    store.services.putRevision(revision('web', 'v1.3.0', { deployed_at: t('02:00') }));
    const revs = (limit = 10, offset = 0) => {
      const { items, total } = store.services.history('web', 'staging', limit, offset);
      return { revs: items.map((r) => r.revision), total };
    };
    expect(revs()).toEqual({ revs: ['v1.3.0', 'v1.2.0', 'v1.1.0', 'v1.0.0'], total: 4 });
    expect(revs(2, 1)).toEqual({ revs: ['v1.2.0', 'v1.1.0'], total: 4 });
    // a rollback deploys v1.0.0 again: the same revision row, now the newest
    store.services.putRevision(revision('web', 'v1.0.0', { deployed_at: t('03:00'), deployed_by: 'bob' }));
    expect(revs()).toEqual({ revs: ['v1.0.0', 'v1.3.0', 'v1.2.0', 'v1.1.0'], total: 4 });
    expect(store.services.revision('web', 'staging', 'v1.0.0')).toMatchObject({ deployed_at: t('03:00'), deployed_by: 'bob' });
    expect(store.services.revision('web', 'prod', 'v1.0.0')).toBeUndefined();
  });

  it('refuses a revision of a service that does not exist', () => {
    expect(() => store.services.putRevision(revision('ghost', 'v1.0.0'))).toThrow(/FOREIGN KEY/);
  });

  it('deletes a service once, its revisions with it, and only in its environment', () => {
    deploy(service('web'));
    deploy(service('web', { environment: 'prod' }));
    expect(store.services.delete('web', 'staging')).toBe(true);
    expect(store.services.delete('web', 'staging')).toBe(false);
    expect(store.services.revision('web', 'staging', 'v1.0.0')).toBeUndefined();
    expect(store.services.history('web', 'staging', 10, 0).total).toBe(0);
    expect(store.services.get('web', 'prod')).toBeDefined();
  });

  describe('deployment audit', () => {
    beforeEach(() => {
      store.services.audit({
        event: 'service.applied',
        service: 'web',
        environment: 'staging',
        revision: 'v1.0.0',
        actor: 'ann',
        at: t('00:01'),
        details: { strategy: 'rolling', replicas: 3, nested: { ok: true, list: [1, 'two'] } },
      });
      store.services.audit({ event: 'service.applied', service: 'api', environment: 'prod', revision: 'v2.0.0', actor: 'bob', at: t('00:02'), details: {} });
      store.services.audit({
        event: 'service.rolled_back',
        service: 'web',
        environment: 'staging',
        revision: null,
        actor: 'bob',
        at: t('00:03'),
        details: { to: 'v0.9.0' },
      });
    });
    const events = (q: Partial<Parameters<Store['services']['auditList']>[0]>) => {
      const { items, total } = store.services.auditList({ limit: 10, offset: 0, ...q });
      return { events: items.map((e) => `${e.event}:${e.service}`), total };
    };

    it('round-trips details as JSON, newest first', () => {
      const { items, total } = store.services.auditList({ limit: 10, offset: 0 });
      expect(total).toBe(3);
      expect(items.map((e) => e.at)).toEqual([t('00:03'), t('00:02'), t('00:01')]);
      expect(items[0]).toMatchObject({ revision: null, details: { to: 'v0.9.0' } });
      expect(items[2]!.details).toEqual({ strategy: 'rolling', replicas: 3, nested: { ok: true, list: [1, 'two'] } });
      expect(items[1]!.details).toEqual({});
    });

    it('filters by service, environment, event, actor and strictly after `since`, and pages', () => {
      expect(events({ service: 'web' }).events).toEqual(['service.rolled_back:web', 'service.applied:web']);
      expect(events({ environment: 'prod' }).events).toEqual(['service.applied:api']);
      expect(events({ event: 'service.applied' }).events).toEqual(['service.applied:api', 'service.applied:web']);
      expect(events({ actor: 'bob', service: 'web' })).toEqual({ events: ['service.rolled_back:web'], total: 1 });
      expect(events({ since: t('00:02') }).events).toEqual(['service.rolled_back:web']);
      expect(events({ limit: 1, offset: 1 })).toEqual({ events: ['service.applied:api'], total: 3 });
    });
  });
});
