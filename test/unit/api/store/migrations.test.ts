/** SQLite's migrations (whichever store the run tests) apply in order on an empty or older database up to the last `user_version`, refuse a newer one, and migration 5 upgrades schema 4 without losing anything. */
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PRE_SCOPE_GRANT } from '../../../../api/access';
import { DB_FILE, migrate } from '../../../../api/store/db';
import { openStore } from '../../../../api/store/index';
import { sqliteMigrations as migrations } from '../../../../api/store/migrations/sqlite/index';
import { isUniqueViolation } from '../../../../api/store/errors';
import { tempDir } from '../../../helpers/stack';
import { failure } from '../../../helpers/store';

// On a database written by the previous release: open sessions learn when their token expires,
// closed ones keep every field, and tokens without scopes keep exactly what they could do before
// (everything their role allows outside the fleet interface).
describe('migration 5', () => {
  it('upgrades a schema-4 database without losing anything', async () => {
    const dir = tempDir();
    const old = new Database(join(dir, DB_FILE));
    for (const m of migrations.filter((x) => x.version <= 4)) old.exec(m.sql);
    old.pragma('user_version = 4');
    old.exec(`
      INSERT INTO users (username, role, kind, created_at) VALUES ('ops', 'administrator', 'human', '2026-01-01T00:00:00Z');
      INSERT INTO tokens (token_id, token_hash, username, scopes, tenants, created_at, expires_at)
        VALUES ('tok_plain', 'h1', 'ops', '[]', '[]', '2026-01-01T00:00:00Z', '2026-01-01T08:00:00.000Z'),
               ('tok_fleet', 'h2', 'ops', '["fleet:read"]', '["acme"]', '2026-01-01T00:00:00Z', NULL);
      INSERT INTO sessions (session_id, device_id, protocol, status, ttl_seconds, opened_by, opened_at, expires_at,
                            closed_at, close_reason, bytes_to_device, bytes_from_device, trace_id, token_id)
        VALUES ('sess-open', 'd1', 'shell', 'open', 3600, 'ops', '2026-01-01T00:00:00Z', '2026-01-01T01:00:00Z',
                NULL, NULL, 5, 6, 't1', 'tok_plain'),
               ('sess-done', 'd1', 'shell', 'closed', 60, 'ops', '2025-12-31T00:00:00Z', '2025-12-31T00:01:00Z',
                '2025-12-31T00:00:30Z', 'closed', 7, 8, 't2', 'tok_plain');
    `);
    old.close();

    const store = await openStore(dir);
    try {
      expect(store.sqlite!.pragma('user_version', { simple: true })).toBe(migrations.at(-1)!.version);
      expect(await store.sessions.get('sess-open')).toMatchObject({ status: 'open', token_expires_at: '2026-01-01T08:00:00.000Z', bytes_to_device: 5 });
      expect(await store.sessions.get('sess-done')).toMatchObject({
        status: 'closed',
        close_reason: 'closed',
        closed_at: '2025-12-31T00:00:30Z',
        bytes_from_device: 8,
        token_expires_at: null,
      });
      // the rule "one open session per protocol per device" survived the rebuild
      const duplicate = await failure(() =>
        store.sessions.insert({
          session_id: 'sess-dup',
          device_id: 'd1',
          protocol: 'shell',
          ttl_seconds: 60,
          opened_by: 'ops',
          token_id: null,
          token_expires_at: null,
          opened_at: '2026-01-01T00:00:01Z',
          expires_at: '2026-01-01T00:01:01Z',
          trace_id: 't3',
          targets: null,
        }),
      );
      expect(isUniqueViolation(duplicate)).toBe(true);
      expect((await store.tokens.findByHash('h1'))?.scopes).toEqual([...PRE_SCOPE_GRANT]);
      expect((await store.tokens.findByHash('h2'))?.scopes).toEqual(['fleet:read']);
      expect(store.sqlite!.pragma('integrity_check', { simple: true })).toBe('ok');
    } finally {
      await store.close();
    }
  });
});

describe('every migration', () => {
  const tablesOf = (db: Database.Database) =>
    (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name").all() as { name: string }[]).map(
      (r) => r.name,
    );

  it('is numbered 1, 2, 3 … with no gap or repeat', async () => {
    expect(migrations.map((m) => m.version)).toEqual(migrations.map((_, i) => i + 1));
  });

  it('applies on an empty database, each in turn, and user_version ends at the last one', async () => {
    const db = new Database(join(tempDir(), DB_FILE));
    try {
      expect(db.pragma('user_version', { simple: true })).toBe(0);
      migrate(db);
      expect(db.pragma('user_version', { simple: true })).toBe(migrations.at(-1)!.version);
      expect(tablesOf(db)).toEqual([
        'access_policies',
        'access_requests',
        'audit_events',
        'audit_log',
        'blob_chunks',
        'blobs',
        'deployment_audit',
        'devices',
        'fleet_groups',
        'fleet_vehicles',
        'idempotency_keys',
        'job_executions',
        'jobs',
        'peers',
        'rate_limit_hits',
        'recording_chunks',
        'recordings',
        'revisions',
        'secrets',
        'services',
        'sessions',
        'tokens',
        'users',
        'webhook_deliveries',
        'webhooks',
      ]);
      expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
      expect(db.pragma('foreign_key_check')).toEqual([]);
    } finally {
      db.close();
    }
  });

  it('brings a database at any earlier version up to the last one, applying only what is missing', async () => {
    const expected = (() => {
      const db = new Database(join(tempDir(), DB_FILE));
      migrate(db);
      const tables = tablesOf(db);
      db.close();
      return tables;
    })();
    for (let at = 1; at < migrations.length; at++) {
      const db = new Database(join(tempDir(), DB_FILE));
      try {
        for (const m of migrations.slice(0, at)) db.exec(m.sql);
        db.pragma(`user_version = ${at}`);
        migrate(db); // would throw "table … already exists" if an applied one ran again
        expect(db.pragma('user_version', { simple: true }), `from version ${at}`).toBe(migrations.at(-1)!.version);
        expect(tablesOf(db), `from version ${at}`).toEqual(expected);
      } finally {
        db.close();
      }
    }
  });

  it('reopening a migrated store applies nothing twice', async () => {
    const dir = tempDir();
    await (await openStore(dir)).close();
    const store = await openStore(dir); // would throw "table users already exists" if re-applied
    try {
      expect(store.sqlite!.pragma('user_version', { simple: true })).toBe(migrations.at(-1)!.version);
    } finally {
      await store.close();
    }
  });

  it('refuses a database written by a newer build', async () => {
    const dir = tempDir();
    const db = new Database(join(dir, DB_FILE));
    db.pragma(`user_version = ${migrations.at(-1)!.version + 1}`);
    db.close();
    await expect(openStore(dir)).rejects.toThrow(/newer than this build understands/);
  });
});
