/**
 * The access repository on the store under test: policies created, listed live, matched against
 * a device's labels and marked deleted; requests created, listed with filters, and every change of
 * status guarded by the status it leaves (and by time), so a second reviewer, a late approval or a
 * sweep finds nothing to change; the live grant of a user for a device and protocol; sessions
 * under a grant found by the expiry (ended or revoked). On SQLite, migration 15 keeps sessions.
 */
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { AccessPolicy } from '../../../../shared/api/access';
import { DB_FILE, migrate } from '../../../../api/store/db';
import type { NewRequest } from '../../../../api/store/access';
import { sqliteMigrations } from '../../../../api/store/migrations/sqlite/index';
import { onPostgres, storeForEachTest } from '../../../helpers/store';
import { tempDir } from '../../../helpers/temp';

/** 2026-03-01 at `hh:mm`. */
const t = (hhmm: string) => `2026-03-01T${hhmm}:00.000Z`;

const policy = (policy_id: string, labels: Record<string, string>, over: Partial<AccessPolicy> = {}): AccessPolicy => ({
  policy_id,
  name: `policy ${policy_id}`,
  match: { labels },
  protocols: ['shell'],
  max_duration_seconds: 3600,
  created_by: 'admin',
  created_at: t('09:00'),
  ...over,
});

const request = (request_id: string, over: Partial<NewRequest> = {}): NewRequest => ({
  request_id,
  requester: 'ann',
  device_id: 'cam-7',
  protocols: ['shell'],
  reason: 'INC-1',
  duration_seconds: 3600,
  created_at: t('10:00'),
  expires_at: t('11:00'),
  ...over,
});

describe('access repository', () => {
  const store = storeForEachTest();

  it('lists live policies, matches them by every label, and keeps a deleted one out', async () => {
    await store.access.createPolicy(policy('apol_a', { env: 'prod' }));
    await store.access.createPolicy(policy('apol_b', { env: 'prod', site: 'plant-3' }, { created_at: t('09:01'), protocols: ['shell', 'diagnostics'] }));
    expect((await store.access.listPolicies(50, 0)).items.map((p) => p.policy_id)).toEqual(['apol_a', 'apol_b']);
    expect((await store.access.policiesFor({ env: 'prod', site: 'plant-3', x: '1' })).map((p) => p.policy_id)).toEqual(['apol_a', 'apol_b']);
    expect((await store.access.policiesFor({ env: 'prod' })).map((p) => p.policy_id)).toEqual(['apol_a']);
    expect(await store.access.policiesFor({ env: 'lab' })).toEqual([]);
    expect((await store.access.livePolicies())[1]).toMatchObject({ match: { labels: { env: 'prod', site: 'plant-3' } }, protocols: ['shell', 'diagnostics'] });
    expect(await store.access.deletePolicy('apol_a', t('09:30'))).toBe(true);
    expect(await store.access.deletePolicy('apol_a', t('09:31'))).toBe(false);
    expect(await store.access.listPolicies(50, 0)).toMatchObject({ total: 1, items: [{ policy_id: 'apol_b' }] });
  });

  it('creates pending requests and lists them newest first, with filters', async () => {
    const r = await store.access.createRequest(request('areq_1'));
    expect(r).toMatchObject({ status: 'pending', protocols: ['shell'], reviewed_by: null, starts_at: null, ends_at: null, revoked_at: null });
    await store.access.createRequest(request('areq_2', { requester: 'bob', device_id: 'cam-8', created_at: t('10:05') }));
    expect((await store.access.list({ limit: 50, offset: 0 })).items.map((x) => x.request_id)).toEqual(['areq_2', 'areq_1']);
    expect((await store.access.list({ requester: 'ann', limit: 50, offset: 0 })).total).toBe(1);
    expect((await store.access.list({ device_id: 'cam-8', status: 'pending', limit: 50, offset: 0 })).items[0]!.request_id).toBe('areq_2');
    expect((await store.access.list({ since: t('10:00'), limit: 50, offset: 0 })).total).toBe(1);
  });

  it('changes a status once, only from the status it leaves, and not past its time', async () => {
    await store.access.createRequest(request('areq_1'));
    expect(await store.access.approve('areq_1', 'boss', 'ok', t('11:00'), t('12:00'))).toBeUndefined(); // expired by then
    const approved = await store.access.approve('areq_1', 'boss', 'ok', t('10:30'), t('11:30'));
    expect(approved).toMatchObject({ status: 'approved', reviewed_by: 'boss', review_reason: 'ok', starts_at: t('10:30'), ends_at: t('11:30') });
    expect(await store.access.deny('areq_1', 'carl', 'no', t('10:31'))).toBeUndefined();
    expect(await store.access.cancel('areq_1', t('10:31'))).toBeUndefined();
    expect(await store.access.revoke('areq_1', 'boss', null, t('11:30'))).toBeUndefined(); // the grant has ended
    expect(await store.access.revoke('areq_1', 'boss', 'done', t('11:00'))).toMatchObject({ status: 'revoked', revoked_by: 'boss', revoke_reason: 'done' });
    expect(await store.access.revoke('areq_1', 'boss', 'again', t('11:01'))).toBeUndefined();

    await store.access.createRequest(request('areq_2'));
    expect(await store.access.cancel('areq_2', t('10:10'))).toMatchObject({ status: 'canceled' });
    await store.access.createRequest(request('areq_3'));
    expect(await store.access.deny('areq_3', 'boss', 'no', t('10:10'))).toMatchObject({ status: 'denied', review_reason: 'no' });
  });

  it('sweeps: pending requests past their time expire, grants past their end end; each once', async () => {
    await store.access.createRequest(request('areq_p'));
    await store.access.createRequest(request('areq_g'));
    await store.access.approve('areq_g', 'boss', 'ok', t('10:10'), t('10:40'));
    expect(await store.access.expirePending(t('10:59'))).toEqual([]);
    expect((await store.access.expirePending(t('11:00'))).map((r) => [r.request_id, r.status])).toEqual([['areq_p', 'expired']]);
    expect(await store.access.expirePending(t('11:00'))).toEqual([]);
    expect(await store.access.endGrants(t('10:39'))).toBe(0);
    expect(await store.access.endGrants(t('10:40'))).toBe(1);
    expect((await store.access.get('areq_g'))!.status).toBe('ended');
  });

  it('finds the live grant of a user for a device and protocol, and the sessions under grants that are over', async () => {
    await store.access.createRequest(request('areq_1', { protocols: ['diagnostics', 'shell'] }));
    await store.access.approve('areq_1', 'boss', 'ok', t('10:10'), t('10:40'));
    const live = (user: string, device: string, protocol: 'shell' | 'file-transfer', at: string) => store.access.liveGrant(user, device, protocol, at);
    expect((await live('ann', 'cam-7', 'shell', t('10:10')))?.request_id).toBe('areq_1');
    expect(await live('ann', 'cam-7', 'shell', t('10:40'))).toBeUndefined();
    expect(await live('ann', 'cam-7', 'shell', t('10:09'))).toBeUndefined();
    expect(await live('ann', 'cam-7', 'file-transfer', t('10:20'))).toBeUndefined();
    expect(await live('bob', 'cam-7', 'shell', t('10:20'))).toBeUndefined();
    expect(await live('ann', 'cam-8', 'shell', t('10:20'))).toBeUndefined();

    const base = {
      device_id: 'cam-7',
      ttl_seconds: 1800,
      opened_by: 'ann',
      token_id: null,
      token_expires_at: null,
      opened_at: t('10:10'),
      expires_at: t('10:40'),
      targets: null,
    };
    await store.sessions.insert({ ...base, session_id: 's-grant', protocol: 'shell', trace_id: 't1', access_request_id: 'areq_1' });
    await store.sessions.insert({ ...base, session_id: 's-plain', protocol: 'diagnostics', trace_id: 't2' });
    expect((await store.sessions.get('s-grant'))!.access_request_id).toBe('areq_1');
    expect(await store.sessions.openIdsOfGrant('areq_1')).toEqual(['s-grant']);
    expect(await store.sessions.dueByGrant(t('10:39'))).toEqual({ ended: [], revoked: [] });
    expect(await store.sessions.dueByGrant(t('10:40'))).toEqual({ ended: ['s-grant'], revoked: [] });
    await store.access.revoke('areq_1', 'boss', null, t('10:20'));
    expect(await store.sessions.dueByGrant(t('10:21'))).toEqual({ ended: [], revoked: ['s-grant'] });
    expect(await store.sessions.close('s-grant', 'access_revoked', t('10:21'))).toMatchObject({ close_reason: 'access_revoked' });
  });

  it.skipIf(onPostgres)('migration 15 keeps the sessions of an earlier schema, and their rule of one open session per protocol', async () => {
    const db = new Database(join(tempDir(), DB_FILE));
    try {
      migrate(db, sqliteMigrations.slice(0, 14));
      db.exec(`INSERT INTO sessions (session_id, device_id, protocol, status, ttl_seconds, opened_by, opened_at, expires_at, trace_id)
               VALUES ('s1', 'd1', 'shell', 'open', 60, 'ann', '${t('10:00')}', '${t('10:01')}', 't1')`);
      migrate(db);
      expect(db.prepare('SELECT session_id, status, access_request_id FROM sessions').all()).toEqual([
        { session_id: 's1', status: 'open', access_request_id: null },
      ]);
      expect(() =>
        db.exec(`INSERT INTO sessions (session_id, device_id, protocol, status, ttl_seconds, opened_by, opened_at, expires_at, trace_id)
                 VALUES ('s2', 'd1', 'shell', 'open', 60, 'ann', '${t('10:00')}', '${t('10:01')}', 't2')`),
      ).toThrow(/UNIQUE/);
      db.exec(`UPDATE sessions SET status = 'closed', closed_at = '${t('10:01')}', close_reason = 'access_expired' WHERE session_id = 's1'`);
      expect(db.pragma('foreign_key_check')).toEqual([]);
    } finally {
      db.close();
    }
  });
});
