/**
 * @module `tether backup` and `tether restore` (docs/cli.md): a copy of the server's database
 * made while it runs, and putting one back while it does not. A restore keeps the database it
 * replaces beside it, so nothing is lost by restoring the wrong file. Both work on the SQLite
 * store; a server on PostgreSQL (TETHER_DATABASE_URL) is backed up with pg_dump and pg_restore.
 */
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ADMIN_TOKEN_FILE } from '../api/identity/bootstrap';
import { BackupError, copyDatabase, LATEST_SCHEMA, lockDatabase, type DatabaseCopy } from '../api/store/backup';
import { DB_FILE } from '../api/store/db';
import { CliError } from '../cli/errors';

type Print = (line: string) => void;

const described = ({ bytes, schemaVersion }: DatabaseCopy) => `${bytes} bytes, schema version ${schemaVersion}`;

/** A BackupError as the command's failure (its code and message); any other error as it is. */
export function asCommandError(err: unknown): unknown {
  return err instanceof BackupError ? new CliError(err.message, err.code) : err;
}

async function asCommand<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    throw asCommandError(err);
  }
}

/**
 * Fails when the server's store is PostgreSQL: its copies are PostgreSQL's own. Like the data
 * dir (`host-commands.ts`), the setting is read from the environment the server is given.
 */
export function requireSqliteStore(command: 'backup' | 'restore', env: NodeJS.ProcessEnv = process.env): void {
  if (!env.TETHER_DATABASE_URL) return;
  const instead = command === 'backup' ? 'back it up with pg_dump' : 'restore it with pg_restore';
  throw new CliError(
    `tether ${command} works on the SQLite store only, and TETHER_DATABASE_URL puts the server's data in PostgreSQL: ${instead}`,
    'postgres_store',
  );
}

/** The database file of `dataDir`; a command that needs one fails when there is none. */
export function existingDatabase(dataDir: string): string {
  const file = join(dataDir, DB_FILE);
  if (!existsSync(file)) throw new CliError(`no tether database in ${dataDir} (set --data-dir, or TETHER_DATA_DIR)`, 'not_found');
  return file;
}

/** Copies `<dataDir>/tether.db` to `file` (mode 0600); an existing file only with `force`. Refused on PostgreSQL. */
export function backup(dataDir: string, file: string, force: boolean, print: Print, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  return asCommand(async () => {
    requireSqliteStore('backup', env);
    const source = existingDatabase(dataDir);
    const target = resolve(file);
    if (!force && existsSync(target)) throw new CliError(`${target} already exists (--force overwrites it)`, 'exists');
    const copy = await copyDatabase(source, target, force);
    print(`wrote ${target} (${described(copy)})`);
  });
}

const stamp = (ms: number) =>
  new Date(ms)
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z');

/**
 * Makes the backup `file` the database of `dataDir`. Refused while anything has the current
 * database open (a running server): it holds an exclusive lock on it from the check until the
 * new file is in place, and keeps it as `tether.db.before-restore-<time>`. Refused on PostgreSQL.
 */
export function restore(file: string, dataDir: string, print: Print, now: () => number = Date.now, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  return asCommand(async () => {
    requireSqliteStore('restore', env);
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    const current = join(dataDir, DB_FILE);
    // Checked and staged first, so a bad backup changes nothing.
    const staged = join(dataDir, `${DB_FILE}.restoring`);
    const copy = await copyDatabase(resolve(file), staged, true);
    try {
      if (copy.schemaVersion > LATEST_SCHEMA) {
        throw new CliError(
          `${file} was made by a newer tether (schema version ${copy.schemaVersion}; this one understands up to ${LATEST_SCHEMA}): upgrade tether to restore it`,
          'too_new',
        );
      }
      const lock = existsSync(current) ? lockDatabase(current) : undefined;
      try {
        if (lock) {
          const aside = `${current}.before-restore-${stamp(now())}`;
          await copyDatabase(lock, aside, false);
          print(`kept the database it replaces in ${aside}`);
        }
        // A -wal beside the new file would be replayed into it: none may survive.
        for (const suffix of ['-wal', '-shm', '-journal']) rmSync(`${current}${suffix}`, { force: true });
        renameSync(staged, current);
      } finally {
        lock?.close();
      }
    } finally {
      rmSync(staged, { force: true });
    }
    print(`restored ${resolve(file)} (${described(copy)}) to ${current}`);
    if (existsSync(join(dataDir, ADMIN_TOKEN_FILE))) {
      print(`${ADMIN_TOKEN_FILE} is as it was; the tokens that work now are the backup's (\`tether admin token\` issues a new one)`);
    }
  });
}
