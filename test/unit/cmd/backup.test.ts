/**
 * `tether backup` and `tether restore` (cmd/backup.ts): on the SQLite store, a copy made through
 * the open store's connection and put back into another data dir; against a server on
 * PostgreSQL, refused with one line that names PostgreSQL's own tools, before anything is read
 * or written. SQLite only: backups are SQLite's.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { copyDatabase, LATEST_SCHEMA } from '../../../api/store/backup';
import { DB_FILE } from '../../../api/store/db';
import { openStore } from '../../../api/store/index';
import { backup, restore } from '../../../cmd/backup';
import { CliError } from '../../../cli/errors';
import { tempDir } from '../../helpers/stack';

const env = { TETHER_DATABASE_URL: 'postgres://tether@db.example/tether' };

async function failure(work: () => Promise<unknown>): Promise<CliError> {
  const err = await work().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(CliError);
  return err as CliError;
}

describe('backups of a PostgreSQL store', () => {
  it('tether backup refuses, pointing to pg_dump', async () => {
    const dir = tempDir();
    const printed: string[] = [];
    const err = await failure(() => backup(dir, join(dir, 'b.db'), false, (l) => printed.push(l), env));
    expect(err.message).toMatch(/PostgreSQL.*pg_dump/);
    expect(err.message).not.toContain('\n');
    expect(err.exitCode).toBe(1);
    expect(printed).toEqual([]);
    expect(existsSync(join(dir, 'b.db'))).toBe(false);
  });

  it('tether restore refuses, pointing to pg_restore, and leaves the data dir as it was', async () => {
    const dir = join(tempDir(), 'data');
    const err = await failure(() => restore(join(dir, 'b.db'), dir, () => {}, Date.now, env));
    expect(err.message).toMatch(/PostgreSQL.*pg_restore/);
    expect(err.message).not.toContain('\n');
    expect(existsSync(dir)).toBe(false);
  });

  it('without TETHER_DATABASE_URL a backup goes on to the SQLite store', async () => {
    const dir = tempDir();
    const err = await failure(() => backup(dir, join(dir, 'b.db'), false, () => {}, {}));
    expect(err.code).toBe('not_found'); // no tether.db in an empty data dir
  });
});

describe('backups of a SQLite store', () => {
  const recording = {
    session_id: 's1',
    device_id: 'dev-1',
    username: 'ann',
    started_at: '2026-01-01T00:00:00.000Z',
    sha256: 'e3b0',
    input: false,
    file: 's1.cast.gz',
  };

  it('copies the open store through its connection, and the copy restores into another data dir', async () => {
    const dataDir = tempDir();
    const store = await openStore({ dataDir });
    await store.recordings.insert(recording);
    const file = join(tempDir(), 'copy.db');
    const copy = await copyDatabase(store.sqlite!, file, false);
    await store.close();
    expect(copy.schemaVersion).toBe(LATEST_SCHEMA);

    const again = join(tempDir(), 'backup.db');
    const printed: string[] = [];
    await backup(dataDir, again, false, (l) => printed.push(l), {});
    // The row's file is not there: the backup leaves that recording out, and says so.
    expect(printed).toEqual([
      expect.stringMatching(/^wrote .*backup\.db \(\d+ bytes, schema version \d+, 0 recordings\)$/),
      'left out the recording of s1: its file is gone (deleted by the retention?)',
    ]);

    const elsewhere = join(tempDir(), 'data');
    await restore(file, elsewhere, (l) => printed.push(l), Date.now, {});
    expect(existsSync(join(elsewhere, DB_FILE))).toBe(true);
    const restored = await openStore({ dataDir: elsewhere });
    try {
      expect(await restored.recordings.get('s1')).toMatchObject({ ...recording, ended_at: null });
    } finally {
      await restored.close();
    }
  });
});
