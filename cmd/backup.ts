/**
 * @module `tether backup` and `tether restore` (docs/backup.md): a copy of the server's database
 * and its session recordings (`./backup-recordings.ts`) made while it runs, one file, and putting
 * one back while it does not. A restore keeps the database and the recordings it replaces beside
 * them, so nothing is lost by restoring the wrong file. Both work on the SQLite store; a server on
 * PostgreSQL (TETHER_DATABASE_URL) keeps its recordings in the database, backed up with pg_dump.
 */
import { chownSync, existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ADMIN_TOKEN_FILE } from '../api/identity/bootstrap';
import { BackupError, copyDatabase, LATEST_SCHEMA, lockDatabase, type DatabaseCopy } from '../api/store/backup';
import { DB_FILE } from '../api/store/db';
import { CliError } from '../cli/errors';
import { makeBackup } from './backup-file';
import { addRecordings, settleRestoredRecordings } from './backup-recordings';

type Print = (line: string) => void;

const described = ({ bytes, schemaVersion }: DatabaseCopy) => `${bytes} bytes, schema version ${schemaVersion}`;
const recordingsText = (n: number) => (n === 1 ? '1 recording' : `${n} recordings`);

/** Where the server keeps its recordings' files (cmd/server.ts). */
const recordingsDir = (dataDir: string) => join(dataDir, 'recordings');

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
  const instead =
    command === 'backup'
      ? 'back it up with pg_dump (docs/peers.md); the session recordings are in that database too (table recording_chunks), so its dump holds them'
      : 'restore it with pg_restore (docs/peers.md)';
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

/**
 * Copies `<dataDir>/tether.db` and the recordings of `<dataDir>/recordings` into one file `file`
 * (mode 0600); an existing file only with `force`. Refused on PostgreSQL.
 */
export function backup(
  dataDir: string,
  file: string,
  force: boolean,
  print: Print,
  env: NodeJS.ProcessEnv = process.env,
  now: () => number = Date.now,
): Promise<void> {
  return asCommand(async () => {
    requireSqliteStore('backup', env);
    const source = existingDatabase(dataDir);
    const target = resolve(file);
    if (!force && existsSync(target)) throw new CliError(`${target} already exists (--force overwrites it)`, 'exists');
    const made = await makeBackup(source, target, force, (staged) => addRecordings(staged, recordingsDir(dataDir), now));
    print(`wrote ${target} (${described(made)}, ${recordingsText(made.filled.recordings)})`);
    for (const { session_id, reason } of made.filled.leftOut) print(`left out the recording of ${session_id}: ${reason}`);
  });
}

/** As root, gives `path` the owner of `dataDir` (a service's own user, as systemd's DynamicUser makes it), so the server can open it. */
function ownLike(dataDir: string, path: string): void {
  if (process.getuid?.() !== 0) return;
  const { uid, gid } = statSync(dataDir);
  const st = statSync(path);
  if (st.uid !== uid || st.gid !== gid) chownSync(path, uid, gid);
}

/** Sets the data dir's recordings directory aside (when it holds anything); resolves to where it went. */
function setRecordingsAside(dataDir: string, at: string): string | undefined {
  const dir = recordingsDir(dataDir);
  if (!existsSync(dir) || readdirSync(dir).length === 0) return undefined;
  const aside = `${dir}.before-restore-${at}`;
  renameSync(dir, aside);
  return aside;
}

/** A file set aside moved back (its directory made as the server would); false when there is none. */
function moveBack(dataDir: string) {
  return (from: string, to: string): boolean => {
    if (!existsSync(from)) return false;
    mkdirSync(recordingsDir(dataDir), { recursive: true, mode: 0o700 });
    ownLike(dataDir, recordingsDir(dataDir));
    renameSync(from, to);
    return true;
  };
}

const stamp = (ms: number) =>
  new Date(ms)
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z');

/**
 * Makes the backup `file` the database of `dataDir`, its recordings with it. Refused while anything
 * has the current database open (a running server): it holds an exclusive lock on it from the
 * check until the new file is in place, and keeps it as `tether.db.before-restore-<time>` (and the
 * recordings directory as `recordings.before-restore-<time>`). Refused on PostgreSQL. Run as root,
 * the new database gets the data dir's owner, so a server running as its own user can open it.
 */
export function restore(file: string, dataDir: string, print: Print, now: () => number = Date.now, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  return asCommand(async () => {
    requireSqliteStore('restore', env);
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    const current = join(dataDir, DB_FILE);
    const at = stamp(now());
    let keptRecordings: string | undefined;
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
          const aside = `${current}.before-restore-${at}`;
          await copyDatabase(lock, aside, false);
          print(`kept the database it replaces in ${aside}`);
        }
        // A -wal beside the new file would be replayed into it: none may survive.
        for (const suffix of ['-wal', '-shm', '-journal']) rmSync(`${current}${suffix}`, { force: true });
        renameSync(staged, current);
        ownLike(dataDir, current);
        // The backup holds its recordings; files here would be played instead of them (api/recordings/routes.ts).
        keptRecordings = setRecordingsAside(dataDir, at);
        if (keptRecordings) print(`kept the recordings it replaces in ${keptRecordings}`);
      } finally {
        lock?.close();
      }
    } finally {
      rmSync(staged, { force: true });
    }
    const recordings = await settleRestoredRecordings(current, recordingsDir(dataDir), keptRecordings, moveBack(dataDir));
    print(`restored ${resolve(file)} (${described(copy)}, ${recordingsText(recordings.held + recordings.movedBack)}) to ${current}`);
    if (recordings.movedBack > 0) {
      print(`moved the files of ${recordingsText(recordings.movedBack)} the backup does not hold back into ${recordingsDir(dataDir)}`);
    }
    if (recordings.missing > 0) {
      print(
        `${recordingsText(recordings.missing)} of the backup will not play: it does not hold them (made by an older tether) and their files are not here; ` +
          `put their <session>.cast.gz files into ${recordingsDir(dataDir)} to play them`,
      );
    }
    if (existsSync(join(dataDir, ADMIN_TOKEN_FILE))) {
      print(`${ADMIN_TOKEN_FILE} is as it was; the tokens that work now are the backup's (\`tether admin token\` issues a new one)`);
    }
  });
}
