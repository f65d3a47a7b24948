/** SQLite's database file (the embedded store, whichever store the run tests): created readable by its owner only (with its WAL files), in WAL mode with full sync and foreign keys on. */
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DB_FILE } from '../../../../api/store/db';
import { openStore, type Store } from '../../../../api/store/index';
import { tempDir } from '../../../helpers/stack';

const modeOf = (path: string) => statSync(path).mode & 0o777;

describe('openDatabase', () => {
  let store: Store | undefined;
  afterEach(async () => {
    await store?.close();
    store = undefined;
  });

  it('creates the data dir 0700 and the database and its WAL files 0600', async () => {
    const dir = join(tempDir(), 'data');
    // A common umask, which alone would give 0755 and 0644: the modes must come from the code.
    const umask = process.umask(0o022);
    try {
      store = await openStore(dir);
      await store.users.insert({ username: 'ann', role: null, kind: 'human', created_at: '2026-01-01T00:00:00Z' }, null);
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

  it('journals in WAL mode, syncs fully and enforces foreign keys', async () => {
    store = await openStore(tempDir());
    expect(store.sqlite!.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(store.sqlite!.pragma('synchronous', { simple: true })).toBe(2); // FULL
    expect(store.sqlite!.pragma('foreign_keys', { simple: true })).toBe(1);
  });

  it('keeps what was written across a close and a reopen', async () => {
    const dir = tempDir();
    store = await openStore(dir);
    await store.users.insert({ username: 'ann', role: 'developer', kind: 'human', created_at: '2026-01-01T00:00:00Z' }, 'hash');
    await store.close();
    store = await openStore(dir);
    expect(await store.users.get('ann')).toMatchObject({ role: 'developer', password_hash: 'hash' });
  });
});
