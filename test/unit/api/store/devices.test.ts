/** The device registry: unique ids and agent token hashes, labels round-tripped, presence updates, and the list filtered by status, paged and ordered by id. */
import { describe, expect, it } from 'vitest';
import { isUniqueViolation, type Store } from '../../../../api/store/index';
import { failure, storeForEachTest } from '../../../helpers/store';

const created = '2026-01-01T00:00:00.000Z';

describe('device repository', () => {
  const store = storeForEachTest();

  it('registers a device offline, never seen, with its labels', () => {
    store.devices.insert('dev-1', 'hash-1', { site: 'berlin', 'rack/slot': 'a 3' }, created);
    expect(store.devices.get('dev-1')).toEqual({
      device_id: 'dev-1',
      agent_status: 'offline',
      last_seen_at: null,
      labels: { site: 'berlin', 'rack/slot': 'a 3' },
      agent_version: null,
      created_at: created,
      forward_allow: null,
    });
    expect(store.devices.get('dev-2')).toBeUndefined();
  });

  it('refuses a device id or an agent token hash used twice', () => {
    store.devices.insert('dev-1', 'hash-1', {}, created);
    expect((failure(() => store.devices.insert('dev-1', 'hash-2', {}, created)) as { code: string }).code).toBe('SQLITE_CONSTRAINT_PRIMARYKEY');
    expect(isUniqueViolation(failure(() => store.devices.insert('dev-2', 'hash-1', {}, created)))).toBe(true);
    expect(store.devices.get('dev-2')).toBeUndefined();
  });

  it('finds a device by the hash of its agent token', () => {
    store.devices.insert('dev-1', 'hash-1', {}, created);
    expect(store.devices.idByTokenHash('hash-1')).toBe('dev-1');
    expect(store.devices.idByTokenHash('hash-9')).toBeUndefined();
  });

  it('records presence: online with a version, heartbeats in bulk, offline, and all offline at start-up', () => {
    for (const id of ['dev-1', 'dev-2', 'dev-3']) store.devices.insert(id, `hash-${id}`, {}, created);
    store.devices.markOnline('dev-1', '1.2.0', '2026-01-01T00:01:00.000Z');
    store.devices.markOnline('dev-2', null, '2026-01-01T00:01:00.000Z', ['127.0.0.1:*', 'db.local:5432']);
    expect(store.devices.get('dev-1')).toMatchObject({
      agent_status: 'online',
      agent_version: '1.2.0',
      last_seen_at: '2026-01-01T00:01:00.000Z',
      forward_allow: null,
    });
    expect(store.devices.get('dev-2')?.forward_allow).toEqual(['127.0.0.1:*', 'db.local:5432']);
    expect(store.devices.onlineCount()).toBe(2);

    store.devices.markSeen(
      new Map([
        ['dev-1', '2026-01-01T00:02:00.000Z'],
        ['dev-2', '2026-01-01T00:02:30.000Z'],
        ['ghost', '2026-01-01T00:02:00.000Z'],
      ]),
    );
    expect(store.devices.get('dev-1')?.last_seen_at).toBe('2026-01-01T00:02:00.000Z');
    expect(store.devices.get('dev-2')?.last_seen_at).toBe('2026-01-01T00:02:30.000Z');
    expect(store.devices.get('dev-3')?.last_seen_at).toBeNull(); // a heartbeat touches only its device

    store.devices.markOffline('dev-1', '2026-01-01T00:03:00.000Z');
    expect(store.devices.get('dev-1')).toMatchObject({ agent_status: 'offline', agent_version: '1.2.0', last_seen_at: '2026-01-01T00:03:00.000Z' });
    expect(store.devices.markAllOffline()).toBe(1); // only dev-2 was still online
    expect(store.devices.onlineCount()).toBe(0);
    expect(store.devices.get('dev-2')?.last_seen_at).toBe('2026-01-01T00:02:30.000Z');
  });

  it('lists devices by id, filtered by agent status, paged, with the total of the filter', () => {
    for (const id of ['dev-e', 'dev-a', 'dev-d', 'dev-c', 'dev-b']) store.devices.insert(id, `hash-${id}`, {}, created);
    for (const id of ['dev-a', 'dev-c', 'dev-e']) store.devices.markOnline(id, null, created);
    const ids = (q: Parameters<Store['devices']['list']>[0]) => {
      const { items, total } = store.devices.list(q);
      return { ids: items.map((d) => d.device_id), total };
    };
    expect(ids({ limit: 10, offset: 0 })).toEqual({ ids: ['dev-a', 'dev-b', 'dev-c', 'dev-d', 'dev-e'], total: 5 });
    expect(ids({ limit: 2, offset: 2 })).toEqual({ ids: ['dev-c', 'dev-d'], total: 5 });
    expect(ids({ agent_status: 'online', limit: 10, offset: 0 })).toEqual({ ids: ['dev-a', 'dev-c', 'dev-e'], total: 3 });
    expect(ids({ agent_status: 'offline', limit: 1, offset: 1 })).toEqual({ ids: ['dev-d'], total: 2 });
    expect(ids({ agent_status: 'online', limit: 10, offset: 10 })).toEqual({ ids: [], total: 3 });
  });

  it('deletes a device once', () => {
    store.devices.insert('dev-1', 'hash-1', {}, created);
    expect(store.devices.delete('dev-1')).toBe(true);
    expect(store.devices.delete('dev-1')).toBe(false);
    expect(store.devices.get('dev-1')).toBeUndefined();
    expect(store.devices.idByTokenHash('hash-1')).toBeUndefined();
  });
});
