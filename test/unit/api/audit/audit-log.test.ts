/**
 * The audit log (api/audit/, api/store/audit-log.ts) on a real store (SQLite, or PostgreSQL):
 * events commit with the change they record or not at all; failed logins fold per username,
 * address and minute, and a flood of them adds one row a minute; the filters match families as
 * ranges (no LIKE wildcards), targets by id or kind:id, and times by [since, until); migration 13
 * revokes the tokens of users already disabled.
 */
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FAILED_LOGIN_ROWS_PER_MINUTE, recordFailedLogin } from '../../../../api/audit/failed-logins';
import { audited, eventsOf, recordAudit, systemSource } from '../../../../api/audit/recorder';
import { DB_FILE } from '../../../../api/store/db';
import { createAuditLogRepo } from '../../../../api/store/audit-log';
import { openStore } from '../../../../api/store/index';
import { sqliteMigrations } from '../../../../api/store/migrations/sqlite/index';
import { tempDir } from '../../../helpers/temp';
import { storeForEachTest } from '../../../helpers/store';

const T0 = Date.parse('2026-03-01T10:00:00.000Z');
const at = (ms: number) => new Date(T0 + ms).toISOString();
const from = (ip: string | null) => ({ trace_id: '0af7651916cd43dd8448eb211c80319c', source_ip: ip });

describe('the audit log', () => {
  const store = storeForEachTest();
  const log = () => createAuditLogRepo(store.db);
  const all = async (filter = {}) => (await log().list({ ...filter, limit: 200, offset: 0 })).items;

  it('commits an event with its change, or neither', async () => {
    const source = systemSource();
    await audited(store, async (tx) => {
      await tx.users.insert({ username: 'ann', role: 'developer', kind: 'human', created_at: at(0) }, null);
      await recordAudit(tx.db, eventsOf(source, at(0), [{ event: 'user.created', target: { kind: 'user', id: 'ann' } }]));
    });
    await expect(
      audited(store, async (tx) => {
        await recordAudit(tx.db, eventsOf(source, at(1), [{ event: 'user.deleted', target: { kind: 'user', id: 'ann' } }]));
        await tx.users.insert({ username: 'ann', role: null, kind: 'human', created_at: at(1) }, null); // taken: the transaction fails
      }),
    ).rejects.toThrow();
    expect((await all()).map((e) => [e.event, e.actor, e.outcome, e.details, e.count])).toEqual([['user.created', 'system', 'success', {}, 1]]);
  });

  it('folds failed logins per username, address and minute; a flood adds one row a minute', async () => {
    for (let n = 0; n < 3; n++) await recordFailedLogin(store.db, from('10.0.0.1'), 'ann', 'unknown_user_or_wrong_password', T0 + n * 1000);
    await recordFailedLogin(store.db, from('10.0.0.2'), 'ann', 'unknown_user_or_wrong_password', T0 + 3000);
    await recordFailedLogin(store.db, from('10.0.0.1'), 'ann', 'account_disabled', T0 + 4000);
    await recordFailedLogin(store.db, from('10.0.0.1'), 'ann', 'unknown_user_or_wrong_password', T0 + 61_000); // a minute after the first
    expect((await all()).map((e) => [e.source_ip, e.details.reason, e.count, e.last_at])).toEqual([
      ['10.0.0.1', 'unknown_user_or_wrong_password', 1, null],
      ['10.0.0.1', 'account_disabled', 1, null],
      ['10.0.0.2', 'unknown_user_or_wrong_password', 1, null],
      ['10.0.0.1', 'unknown_user_or_wrong_password', 3, at(2000)],
    ]);

    const t = T0 + 600_000; // no failed login in the minute before
    for (let n = 0; n < FAILED_LOGIN_ROWS_PER_MINUTE + 20; n++)
      await recordFailedLogin(store.db, from(`10.1.0.${n}`), `guess-${n}`, 'unknown_user_or_wrong_password', t + n);
    const flood = await all({ since: new Date(t).toISOString() });
    expect(flood).toHaveLength(FAILED_LOGIN_ROWS_PER_MINUTE + 1);
    expect(flood[0]).toMatchObject({ actor: 'anonymous', target: { kind: 'user', id: '*' }, source_ip: null, count: 20, details: { reason: 'flood' } });
  });

  it('filters by family as a range, by target id or kind:id, and by [since, until)', async () => {
    const source = systemSource();
    await recordAudit(
      store.db,
      eventsOf(source, at(0), [
        { event: 'user.created', target: { kind: 'user', id: 'cam-7' } },
        { event: 'device.created', target: { kind: 'device', id: 'cam-7' } },
        { event: 'token.created', target: { kind: 'token', id: 'tok_x' } },
      ]),
    );
    // names that a LIKE 'user.%' would also match, or that start like a family without its dot
    await store.db
      .insertInto('audit_log')
      .values(
        ['userXcreated', 'users.created'].map((event) => ({
          event,
          actor: 'x',
          target_kind: 'user',
          target_id: 'x',
          outcome: 'success',
          at: at(1),
          trace_id: 't',
        })),
      )
      .execute();
    expect((await all({ event: 'user.' })).map((e) => e.event)).toEqual(['user.created']);
    expect((await all({ event: 'device.created' })).map((e) => e.target.id)).toEqual(['cam-7']);
    expect((await all({ target: 'cam-7' })).map((e) => e.event)).toEqual(['device.created', 'user.created']);
    expect((await all({ target: 'device:cam-7' })).map((e) => e.event)).toEqual(['device.created']);
    expect(await all({ since: at(1), until: at(2) })).toHaveLength(2);
    expect(await all({ until: at(0) })).toEqual([]);
  });
});

describe('migration 13', () => {
  it("revokes the tokens of users disabled before it, so that enabling them revives none; others' stay", async () => {
    const dir = tempDir();
    const old = new Database(join(dir, DB_FILE));
    for (const m of sqliteMigrations.filter((x) => x.version <= 12)) old.exec(m.sql);
    old.pragma('user_version = 12');
    old.exec(`
      INSERT INTO users (username, role, kind, created_at, disabled) VALUES ('ops', 'administrator', 'human', '2026-01-01T00:00:00Z', 0),
                                                                           ('ann', 'developer', 'human', '2026-01-01T00:00:00Z', 1);
      INSERT INTO tokens (token_id, token_hash, username, created_at) VALUES ('tok_ops', 'h1', 'ops', '2026-01-01T00:00:00Z'),
                                                                            ('tok_ann', 'h2', 'ann', '2026-01-01T00:00:00Z');
    `);
    old.close();
    const store = await openStore(dir);
    try {
      expect((await store.tokens.get('tok_ann'))!.revoked_at).toMatch(/^\d{4}-\d{2}-\d{2}T[\d:.]+Z$/);
      expect((await store.tokens.get('tok_ops'))!.revoked_at).toBeNull();
    } finally {
      await store.close();
    }
  });
});
