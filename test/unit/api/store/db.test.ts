/** The database file: created readable by its owner only (with its WAL files), in WAL mode with full sync and foreign keys on. */
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DB_FILE } from '../../../../api/store/db';
import { openStore, type Store } from '../../../../api/store/index';
import { tempDir } from '../../../helpers/stack';

const modeOf = (path: string) => statSync(path).mode & 0o777;

describe('openDatabase', () => {
  let store: Store | undefined;
  afterEach(() => store?.close());

  it('creates the data dir 0700 and the database and its WAL files 0600', () => {
    const dir = join(tempDir(), 'data');
    // A common umask, which alone would give 0755 and 0644: the modes must come from the code.
    const umask = process.umask(0o022);
    try {
      store = openStore(dir);
      store.users.insert({ username: 'ann', role: null, kind: 'human', created_at: '2026-01-01T00:00:00Z' }, null);
    } finally {
      process.umask(umask);
    }
    expect(modeOf(dir)).toBe(0o700);
    const file = join(dir, DB_FILE);
    expect(modeOf(file)).toBe(0o600);
    for (const side of [`${file}-wal`, `${file}-shm`]) {
      expect(existsSync(side), side).toBe(true);
      expect(modeOf(side), side).toBe(0o600);
    }
  });

  it('journals in WAL mode, syncs fully and enforces foreign keys', () => {
    store = openStore(tempDir());
    expect(store.db.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(store.db.pragma('synchronous', { simple: true })).toBe(2); // FULL
    expect(store.db.pragma('foreign_keys', { simple: true })).toBe(1);
  });

  it('keeps what was written across a close and a reopen', () => {
    const dir = tempDir();
    store = openStore(dir);
    store.users.insert({ username: 'ann', role: 'developer', kind: 'human', created_at: '2026-01-01T00:00:00Z' }, 'hash');
    store.close();
    store = openStore(dir);
    expect(store.users.get('ann')).toMatchObject({ role: 'developer', password_hash: 'hash' });
  });
});
