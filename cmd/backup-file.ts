/**
 * @module A backup file being made (cmd/backup.ts): the database copy is made under a staging
 * name beside its final one, the recordings are added to it (`./backup-recordings.ts`), and only
 * then is it checked (SQLite's `integrity_check`, a tether schema), flushed to disk and given its
 * name, so a failed backup never leaves a half-made file under that name.
 */
import { randomBytes } from 'node:crypto';
import { rmSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { BackupError, checkDatabase, copyDatabase, placeFile, syncFile, type DatabaseCopy } from '../api/store/backup';

/**
 * Makes the backup `target` of the database `source`: a consistent snapshot (SQLite's online
 * backup) under a staging name, `fill` adding to it what else the backup holds, then checked and
 * named. Resolves to the file's size and schema version, and what `fill` resolved to.
 */
export async function makeBackup<T>(
  source: string,
  target: string,
  force: boolean,
  fill: (staged: string) => Promise<T>,
): Promise<DatabaseCopy & { filled: T }> {
  const staged = join(dirname(target), `.${basename(target)}.${randomBytes(6).toString('hex')}.backup`);
  try {
    await copyDatabase(source, staged, true);
    const filled = await fill(staged);
    const schemaVersion = checkDatabase(staged, 'the backup');
    syncFile(staged);
    placeFile(staged, target, force, () => new BackupError(`${target} already exists (--force overwrites it)`, 'exists'));
    syncFile(dirname(target));
    return { bytes: statSync(target).size, schemaVersion, filled };
  } finally {
    rmSync(staged, { force: true });
    rmSync(`${staged}-journal`, { force: true });
  }
}
