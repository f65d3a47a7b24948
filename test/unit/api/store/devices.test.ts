/** The device registry: unique ids and agent token hashes, labels round-tripped, presence updates (one by one and in batches), token replacement, and the list filtered by status, paged and ordered by id. */
import { describe, expect, it } from 'vitest';
import { isUniqueViolation, type Store } from '../../../../api/store/index';
import { failure, onPostgres, storeForEachTest } from '../../../helpers/store';

const created = '2026-01-01T00:00:00.000Z';

describe('device repository', () => {
  const store = storeForEachTest();

  it('registers a device offline, never seen, with its labels', async () => {
    await store.devices.insert('dev-1', 'hash-1', { site: 'berlin', 'rack/slot': 'a 3' }, created);
    expect(await store.devices.get('dev-1')).toEqual({
      device_id: 'dev-1',
      agent_status: 'offline',
      last_seen_at: null,
      labels: { site: 'berlin', 'rack/slot': 'a 3' },
      agent_version: null,
      created_at: created,
      forward_allow: null,
    });
    expect(await store.devices.get('dev-2')).toBeUndefined();
  });

  it('refuses a device id or an agent token hash used twice', async () => {
    await store.devices.insert('dev-1', 'hash-1', {}, created);
    const sameId = (await failure(() => store.devices.insert('dev-1', 'hash-2', {}, created))) as { code: string; constraint?: string };
    expect(isUniqueViolation(sameId)).toBe(true);
    // the primary key refused it (PostgreSQL names the constraint; SQLite has a code of its own)
    expect(onPostgres ? sameId.constraint : sameId.code).toBe(onPostgres ? 'devices_pkey' : 'SQLITE_CONSTRAINT_PRIMARYKEY');
    expect(isUniqueViolation(await failure(() => store.devices.insert('dev-2', 'hash-1', {}, created)))).toBe(true);
    expect(await store.devices.idByTokenHash('hash-2')).toBeUndefined();
    expect(await store.devices.get('dev-2')).toBeUndefined();
  });

  it('finds a device by the hash of its agent token', async () => {
    await store.devices.insert('dev-1', 'hash-1', {}, created);
    expect(await store.devices.idByTokenHash('hash-1')).toBe('dev-1');
    expect(await store.devices.idByTokenHash('hash-9')).toBeUndefined();
  });

  it('records presence: online with a version, heartbeats in bulk, offline, and all offline at start-up', async () => {
    for (const id of ['dev-1', 'dev-2', 'dev-3']) await store.devices.insert(id, `hash-${id}`, {}, created);
    await store.devices.markOnline('dev-1', '1.2.0', '2026-01-01T00:01:00.000Z');
    await store.devices.markOnline('dev-2', null, '2026-01-01T00:01:00.000Z', ['127.0.0.1:*', 'db.local:5432']);
    expect(await store.devices.get('dev-1')).toMatchObject({
      agent_status: 'online',
      agent_version: '1.2.0',
      last_seen_at: '2026-01-01T00:01:00.000Z',
      forward_allow: null,
    });
    expect((await store.devices.get('dev-2'))?.forward_allow).toEqual(['127.0.0.1:*', 'db.local:5432']);
    expect(await store.devices.onlineCount()).toBe(2);

    await store.devices.markSeen(
      new Map([
        ['dev-1', '2026-01-01T00:02:00.000Z'],
        ['dev-2', '2026-01-01T00:02:30.000Z'],
        ['ghost', '2026-01-01T00:02:00.000Z'],
      ]),
    );
    expect((await store.devices.get('dev-1'))?.last_seen_at).toBe('2026-01-01T00:02:00.000Z');
    expect((await store.devices.get('dev-2'))?.last_seen_at).toBe('2026-01-01T00:02:30.000Z');
    expect((await store.devices.get('dev-3'))?.last_seen_at).toBeNull(); // a heartbeat touches only its device

    await store.devices.markOffline('dev-1', '2026-01-01T00:03:00.000Z');
    expect(await store.devices.get('dev-1')).toMatchObject({ agent_status: 'offline', agent_version: '1.2.0', last_seen_at: '2026-01-01T00:03:00.000Z' });
    expect(await store.devices.markAllOffline()).toBe(1); // only dev-2 was still online
    expect(await store.devices.onlineCount()).toBe(0);
    expect((await store.devices.get('dev-2'))?.last_seen_at).toBe('2026-01-01T00:02:30.000Z');
  });

  it('applies a batch of presence changes in order, and replaces agent tokens', async () => {
    for (const id of ['dev-1', 'dev-2']) await store.devices.insert(id, `hash-${id}`, {}, created);
    await store.devices.applyPresence([
      { kind: 'online', deviceId: 'dev-1', agentVersion: '1.0.0', forwardAllow: ['127.0.0.1:22'], at: '2026-01-01T00:01:00.000Z' },
      { kind: 'online', deviceId: 'dev-2', agentVersion: null, forwardAllow: null, at: '2026-01-01T00:01:00.000Z' },
      { kind: 'offline', deviceId: 'dev-2', at: '2026-01-01T00:02:00.000Z' },
      { kind: 'offline', deviceId: 'ghost', at: '2026-01-01T00:02:00.000Z' },
    ]);
    expect(await store.devices.onlineIds()).toEqual(['dev-1']);
    expect(await store.devices.get('dev-1')).toMatchObject({
      agent_version: '1.0.0',
      forward_allow: ['127.0.0.1:22'],
      last_seen_at: '2026-01-01T00:01:00.000Z',
    });
    expect(await store.devices.get('dev-2')).toMatchObject({ agent_status: 'offline', last_seen_at: '2026-01-01T00:02:00.000Z' });

    expect(await store.devices.tokenHash('dev-1')).toBe('hash-dev-1');
    expect(await store.devices.replaceTokenHash('dev-1', 'hash-new')).toBe(true);
    expect(await store.devices.replaceTokenHash('ghost', 'hash-ghost')).toBe(false);
    expect(await store.devices.tokenHash('dev-1')).toBe('hash-new');
    expect(await store.devices.idByTokenHash('hash-dev-1')).toBeUndefined();
    expect(await store.devices.tokenHash('ghost')).toBeUndefined();
    expect(await store.devices.tokenHashes(['dev-2', 'ghost', 'dev-1', 'dev-2'])).toEqual(
      new Map([
        ['dev-2', 'hash-dev-2'],
        ['dev-1', 'hash-new'],
      ]),
    );
    expect(await store.devices.tokenHashes([])).toEqual(new Map());
  });

  it('keeps presence by connection generation: a late disconnect never hides a newer connect on another node', async () => {
    await store.devices.insert('dev-g', 'hash-g', {}, '2026-01-01T00:00:00.000Z');
    const connect = (node: string, at: string) => store.devices.connect('dev-g', { node, url: `http://${node}`, agentVersion: '1', forwardAllow: null, at });
    const onA = await connect('peer-a-1', '2026-01-01T00:01:00.000Z');
    const onB = await connect('peer-b-1', '2026-01-01T00:02:00.000Z'); // the agent moved before A noticed
    expect(onB).toBe(onA! + 1);
    expect(await store.devices.disconnect('dev-g', onA!, '2026-01-01T00:03:00.000Z')).toBe(false); // A's late disconnect
    expect(await store.devices.get('dev-g')).toMatchObject({ agent_status: 'online', last_seen_at: '2026-01-01T00:02:00.000Z' });
    expect(await store.devices.streamUrlOf('dev-g')).toBe('http://peer-b-1');
    // B died: whoever leads takes its agents offline, and only those of nodes no longer alive
    expect(await store.devices.releaseUnheld(['peer-b-1'], '2026-01-01T00:04:00.000Z')).toEqual([]);
    expect(await store.devices.releaseUnheld(['peer-a-1'], '2026-01-01T00:04:00.000Z')).toEqual(['dev-g']);
    expect(await store.devices.get('dev-g')).toMatchObject({ agent_status: 'offline' });
    expect(await store.devices.streamUrlOf('dev-g')).toBeUndefined();
    expect(await store.devices.disconnect('dev-g', onB!, '2026-01-01T00:05:00.000Z')).toBe(false); // already offline
    expect(
      await store.devices.connect('nope', { node: 'x', url: 'http://x', agentVersion: null, forwardAllow: null, at: '2026-01-01T00:00:00.000Z' }),
    ).toBeUndefined();
  });

  it('lists devices by id, filtered by agent status, paged, with the total of the filter', async () => {
    for (const id of ['dev-e', 'dev-a', 'dev-d', 'dev-c', 'dev-b']) await store.devices.insert(id, `hash-${id}`, {}, created);
    for (const id of ['dev-a', 'dev-c', 'dev-e']) await store.devices.markOnline(id, null, created);
    const ids = async (q: Parameters<Store['devices']['list']>[0]) => {
      const { items, total } = await store.devices.list(q);
      return { ids: items.map((d) => d.device_id), total };
    };
    expect(await ids({ limit: 10, offset: 0 })).toEqual({ ids: ['dev-a', 'dev-b', 'dev-c', 'dev-d', 'dev-e'], total: 5 });
    expect(await ids({ limit: 2, offset: 2 })).toEqual({ ids: ['dev-c', 'dev-d'], total: 5 });
    expect(await ids({ agent_status: 'online', limit: 10, offset: 0 })).toEqual({ ids: ['dev-a', 'dev-c', 'dev-e'], total: 3 });
    expect(await ids({ agent_status: 'offline', limit: 1, offset: 1 })).toEqual({ ids: ['dev-d'], total: 2 });
    expect(await ids({ agent_status: 'online', limit: 10, offset: 10 })).toEqual({ ids: [], total: 3 });
  });

  it('deletes a device once', async () => {
    await store.devices.insert('dev-1', 'hash-1', {}, created);
    expect(await store.devices.delete('dev-1')).toBe(true);
    expect(await store.devices.delete('dev-1')).toBe(false);
    expect(await store.devices.get('dev-1')).toBeUndefined();
    expect(await store.devices.idByTokenHash('hash-1')).toBeUndefined();
  });
});
