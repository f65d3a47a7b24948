/**
 * Migration 5 on a database written by the previous release (schema 4): open sessions learn
 * when their token expires, closed ones keep every field, and tokens without scopes keep
 * exactly what they could do before (everything their role allows outside the fleet interface).
 */
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PRE_SCOPE_GRANT } from '../../api/access';
import { DB_FILE } from '../../api/store/db';
import { openStore } from '../../api/store/index';
import { migrations } from '../../api/store/migrations/index';
import { tempDir } from '../helpers/stack';

describe('migration 5', () => {
  it('upgrades a schema-4 database without losing anything', () => {
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

    const store = openStore(dir);
    try {
      expect(store.db.pragma('user_version', { simple: true })).toBe(migrations.at(-1)!.version);
      expect(store.sessions.get('sess-open')).toMatchObject({ status: 'open', token_expires_at: '2026-01-01T08:00:00.000Z', bytes_to_device: 5 });
      expect(store.sessions.get('sess-done')).toMatchObject({
        status: 'closed', close_reason: 'closed', closed_at: '2025-12-31T00:00:30Z', bytes_from_device: 8, token_expires_at: null,
      });
      // the rule "one open session per protocol per device" survived the rebuild
      expect(() =>
        store.sessions.insert({
          session_id: 'sess-dup', device_id: 'd1', protocol: 'shell', ttl_seconds: 60, opened_by: 'ops', token_id: null,
          token_expires_at: null, opened_at: '2026-01-01T00:00:01Z', expires_at: '2026-01-01T00:01:01Z', trace_id: 't3',
        }),
      ).toThrow(/UNIQUE/);
      expect(store.tokens.findByHash('h1')?.scopes).toEqual([...PRE_SCOPE_GRANT]);
      expect(store.tokens.findByHash('h2')?.scopes).toEqual(['fleet:read']);
      expect(store.db.pragma('integrity_check', { simple: true })).toBe('ok');
    } finally {
      store.close();
    }
  });
});
