/**
 * The jobs repository on the store under test: a job with 10,000 executions created in one
 * transaction (quickly), read, listed, counted, paged and canceled; targets resolved from devices,
 * fleet groups (per tenant) and labels; job audit events appended inside a transaction and listed.
 * On SQLite, migration 14 keeps the remote-access audit's ids and its counter. (Blobs: ./blobs.test.ts.)
 */
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { appendJobAudit } from '../../../../api/store/audit';
import { DB_FILE, migrate } from '../../../../api/store/db';
import type { Store } from '../../../../api/store/index';
import type { NewJob } from '../../../../api/store/jobs';
import { sqliteMigrations } from '../../../../api/store/migrations/sqlite/index';
import { onPostgres, storeForEachTest } from '../../../helpers/store';
import { tempDir } from '../../../helpers/temp';

const T0 = '2026-03-01T10:00:00.000Z';

const newJob = (over: Partial<NewJob> = {}): NewJob => ({
  kind: 'diagnostics',
  target: { device_ids: ['d1'] },
  spec: { op: 'system.info', params: {} },
  max_per_minute: 60,
  max_in_flight: 10,
  abort_failure_pct: null,
  abort_min_executed: 10,
  expires_in_seconds: 3600,
  created_by: 'ann',
  created_at: T0,
  trace_id: 'trace-1',
  ...over,
});

async function addDevices(store: Store, ids: string[], labels: Record<string, string> = {}): Promise<void> {
  for (const id of ids) await store.devices.insert(id, `hash-${id}`, labels, T0);
}

describe('jobs repository', () => {
  const store = storeForEachTest();

  it('creates a job with 10,000 executions in one go, in target order, and reads it back', async () => {
    const devices = Array.from({ length: 10_000 }, (_, i) => `dev-${String(i).padStart(5, '0')}`);
    const started = performance.now();
    const job = await store.jobs.create(newJob({ target: { labels: { fleet: 'all' } } }), devices);
    const took = performance.now() - started;
    expect(took).toBeLessThan(5000);
    expect(job.job_id).toMatch(/^job_[a-z2-7]{20}$/);
    expect(job).toMatchObject({ status: 'in_progress', expires_at: '2026-03-01T11:00:00.000Z', next_start_at: T0, finished_at: null });
    expect(await store.jobs.get(job.job_id)).toEqual(job);
    expect((await store.jobs.counts([job.job_id])).get(job.job_id)).toEqual({
      queued: 10_000,
      in_progress: 0,
      succeeded: 0,
      failed: 0,
      timed_out: 0,
      canceled: 0,
    });
    const page = await store.jobs.executions(job.job_id, { limit: 3, offset: 9_998 });
    expect(page.total).toBe(10_000);
    expect(page.items.map((e) => [e.seq, e.device_id, e.status, e.attempt, e.error])).toEqual([
      [9_998, 'dev-09998', 'queued', 0, null],
      [9_999, 'dev-09999', 'queued', 0, null],
    ]);
  });

  it('lists newest first, by status and by creator, with totals, and counts several jobs in one query', async () => {
    const a = await store.jobs.create(newJob({ created_at: '2026-03-01T10:00:00.000Z' }), ['d1', 'd2']);
    const b = await store.jobs.create(newJob({ created_at: '2026-03-01T10:01:00.000Z', created_by: 'bob' }), ['d1']);
    const c = await store.jobs.create(newJob({ created_at: '2026-03-01T10:02:00.000Z' }), ['d3']);
    expect(await store.jobs.cancel(c.job_id, '2026-03-01T10:03:00.000Z', 'ann')).toBe(true);

    const all = await store.jobs.list({ limit: 2, offset: 0 });
    expect(all.total).toBe(3);
    expect(all.items.map((j) => j.job_id)).toEqual([c.job_id, b.job_id]);
    expect((await store.jobs.list({ limit: 10, offset: 2 })).items.map((j) => j.job_id)).toEqual([a.job_id]);
    const anns = await store.jobs.list({ created_by: 'ann', limit: 10, offset: 0 });
    expect(anns.items.map((j) => j.job_id)).toEqual([c.job_id, a.job_id]);
    const running = await store.jobs.list({ status: 'in_progress', created_by: 'ann', limit: 10, offset: 0 });
    expect(running).toMatchObject({ total: 1, items: [{ job_id: a.job_id }] });

    const counts = await store.jobs.counts([a.job_id, c.job_id, 'job_none']);
    expect(counts.get(a.job_id)).toMatchObject({ queued: 2, canceled: 0 });
    expect(counts.get(c.job_id)).toMatchObject({ queued: 0, canceled: 1 });
    expect(counts.get('job_none')).toMatchObject({ queued: 0, canceled: 0 });
  });

  it('cancels once: queued executions end canceled (job_canceled), one in progress runs on', async () => {
    const job = await store.jobs.create(newJob(), ['d1', 'd2', 'd3']);
    await store.db
      .updateTable('job_executions')
      .set({ status: 'in_progress', attempt: 1, started_at: T0 })
      .where('job_id', '=', job.job_id)
      .where('seq', '=', 1)
      .execute();
    const at = '2026-03-01T10:05:00.000Z';
    expect(await store.jobs.cancel(job.job_id, at, 'ann')).toBe(true);
    expect(await store.jobs.get(job.job_id)).toMatchObject({ status: 'canceled', finished_at: at });
    const { items } = await store.jobs.executions(job.job_id, { limit: 10, offset: 0 });
    expect(items.map((e) => [e.device_id, e.status, e.error?.code ?? null, e.finished_at])).toEqual([
      ['d1', 'canceled', 'job_canceled', at],
      ['d2', 'in_progress', null, null],
      ['d3', 'canceled', 'job_canceled', at],
    ]);
    expect(items[0]!.error!.message).toContain('ann');
    expect((await store.jobs.executions(job.job_id, { status: 'canceled', limit: 10, offset: 0 })).total).toBe(2);
    // A second cancel (here or on a peer) changes nothing.
    expect(await store.jobs.cancel(job.job_id, '2026-03-01T10:06:00.000Z', 'bob')).toBe(false);
    expect(await store.jobs.get(job.job_id)).toMatchObject({ status: 'canceled', finished_at: at });
  });

  it('resolves targets: registered ids, a group of one tenant only, labels all matching', async () => {
    await addDevices(store, ['d1', 'd2'], { site: 'north', tier: 'edge' });
    await addDevices(store, ['d3'], { site: 'north' });
    expect([...(await store.jobs.existingDevices(['d1', 'dx', 'd3']))].sort()).toEqual(['d1', 'd3']);
    expect(await store.jobs.devicesWithLabels({ site: 'north', tier: 'edge' })).toEqual(['d1', 'd2']);
    expect(await store.jobs.devicesWithLabels({ site: 'south' })).toEqual([]);

    for (const tenant of ['acme', 'globex']) {
      await store.db
        .insertInto('fleet_groups')
        .values({ tenant_id: tenant, group_id: 'grp_1', name: 'vans', name_key: 'vans', created_at: T0, created_by: 'ann' })
        .execute();
    }
    const vehicle = (tenant: string, vehicle_id: string, device_id: string | null) => ({
      tenant_id: tenant,
      vehicle_id,
      vin: `VIN${vehicle_id}`,
      device_id,
      group_id: 'grp_1',
      created_at: T0,
    });
    await store.db
      .insertInto('fleet_vehicles')
      .values([
        vehicle('acme', 'v2', 'd2'),
        vehicle('acme', 'v1', 'd1'),
        vehicle('acme', 'v3', null),
        vehicle('acme', 'v4', 'unregistered'),
        vehicle('globex', 'v1', 'd3'),
      ])
      .execute();
    expect(await store.jobs.devicesOfGroup('acme', 'grp_1')).toEqual(['d1', 'd2']);
    expect(await store.jobs.devicesOfGroup('globex', 'grp_1')).toEqual(['d3']);
    expect(await store.jobs.devicesOfGroup('initech', 'grp_1')).toBeUndefined();
  });

  it('lets a device fetch a blob only while a file-push of it runs there', async () => {
    const job = await store.jobs.create(newJob({ kind: 'file-push', spec: { blob_id: 'blob_a', path: 'x', mode: '0644' } }), ['d1', 'd2']);
    expect(await store.jobs.mayFetchBlob('d1', 'blob_a')).toBe(false);
    await store.db
      .updateTable('job_executions')
      .set({ status: 'in_progress', attempt: 1 })
      .where('job_id', '=', job.job_id)
      .where('device_id', '=', 'd1')
      .execute();
    expect(await store.jobs.mayFetchBlob('d1', 'blob_a')).toBe(true);
    expect(await store.jobs.mayFetchBlob('d1', 'blob_b')).toBe(false);
    expect(await store.jobs.mayFetchBlob('d2', 'blob_a')).toBe(false);
  });
});

describe('job audit events', () => {
  const store = storeForEachTest();

  it('are appended inside a transaction, name their job, and list by job and by owner', async () => {
    await store.audit.append({
      event: 'session.opened',
      session_id: 's1',
      device_id: 'd1',
      protocol: 'shell',
      actor: 'ann',
      owner: 'ann',
      reason: null,
      at: T0,
      trace_id: 't0',
      targets: null,
    });
    await store.transaction(async (tx) => {
      await tx.audit.appendJob({ event: 'job.created', job_id: 'job_a', actor: 'bob', owner: 'bob', reason: null, trace_id: 't1', at: T0 });
    });
    await store.db
      .transaction()
      .execute((trx) =>
        appendJobAudit(trx, { event: 'job.aborted', job_id: 'job_a', actor: 'system', owner: 'bob', reason: 'failed 50% of 10', trace_id: 't1', at: T0 }),
      );
    const byJob = await store.audit.list({ job_id: 'job_a', limit: 10, offset: 0 });
    expect(byJob.total).toBe(2);
    expect(byJob.items[0]).toEqual({
      id: expect.any(Number) as number,
      event: 'job.aborted',
      job_id: 'job_a',
      session_id: null,
      device_id: null,
      protocol: null,
      actor: 'system',
      reason: 'failed 50% of 10',
      at: T0,
      trace_id: 't1',
      targets: null,
    });
    const anns = await store.audit.list({ owner: 'ann', limit: 10, offset: 0 });
    expect(anns.items.map((e) => e.event)).toEqual(['session.opened']);
    expect('job_id' in anns.items[0]!).toBe(false);
  });
});

describe.skipIf(onPostgres)('migration 14 on SQLite', () => {
  it('keeps the remote-access audit’s rows, ids and counter while making it hold job events', () => {
    const db = new Database(join(tempDir(), DB_FILE));
    try {
      migrate(
        db,
        sqliteMigrations.filter((m) => m.version < 14),
      );
      const insert = db.prepare(
        "INSERT INTO audit_events (event, session_id, device_id, protocol, actor, owner, at, trace_id) VALUES ('session.opened', ?, 'd1', 'shell', 'ann', 'ann', ?, 't')",
      );
      for (let i = 1; i <= 3; i++) insert.run(`s${i}`, T0);
      db.prepare('DELETE FROM audit_events WHERE id = 3').run();
      // Migration 14 itself (later ones change the audit again).
      migrate(
        db,
        sqliteMigrations.filter((m) => m.version <= 14),
      );
      expect(db.pragma('user_version', { simple: true })).toBe(14);
      expect(db.prepare('SELECT id, session_id, job_id FROM audit_events ORDER BY id').all()).toEqual([
        { id: 1, session_id: 's1', job_id: null },
        { id: 2, session_id: 's2', job_id: null },
      ]);
      db.prepare("INSERT INTO audit_events (event, job_id, actor, owner, at, trace_id) VALUES ('job.created', 'job_a', 'ann', 'ann', ?, 't')").run(T0);
      // Id 3 was used once: AUTOINCREMENT never hands it out again, across the rebuild too.
      expect(db.prepare("SELECT id FROM audit_events WHERE job_id = 'job_a'").get()).toEqual({ id: 4 });
      expect(db.pragma('foreign_key_check')).toEqual([]);
    } finally {
      db.close();
    }
  });
});
