/**
 * @module Copies of the database for backups and restores (docs/cli.md), on the SQLite store only
 * (a PostgreSQL store is copied with its own tools, pg_dump and pg_restore): SQLite's online
 * backup API reads a consistent snapshot even while a server writes (WAL), and every copy is
 * checked (`integrity_check`, a tether schema) and made one self-contained file of mode 0600
 * before it takes its final name, so a failed copy never leaves a half-written file under that name.
 */
import Database from 'better-sqlite3';
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, fsyncSync, linkSync, openSync, renameSync, rmSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { Db } from './db';

/** The schema version this build creates and understands. */
export { LATEST_SCHEMA } from './db';

export type BackupErrorCode = 'not_found' | 'exists' | 'in_use' | 'not_a_database' | 'too_new';

/** A copy or a lock that cannot be made; `code` says why. */
export class BackupError extends Error {
  override name = 'BackupError';
  constructor(
    message: string,
    readonly code: BackupErrorCode,
  ) {
    super(message);
  }
}

export interface DatabaseCopy {
  /** Size of the file written. */
  bytes: number;
  /** Its `user_version`: the last migration applied. */
  schemaVersion: number;
}

// Copy every page in one step: the backup API restarts a copy whenever another connection
// writes between two steps, so small steps could restart forever under a busy server.
const ALL_PAGES = 0x7fffffff;

/** Opens an existing database file; read-write, so a crashed writer's WAL can be recovered. */
function openExisting(file: string): Db {
  try {
    return new Database(file, { fileMustExist: true });
  } catch (err) {
    if ((err as { code?: string }).code === 'SQLITE_CANTOPEN') throw new BackupError(`${file}: no such database file`, 'not_found');
    throw err;
  }
}

/**
 * Checks the database in `file` whole (SQLite's integrity check, then that it is a tether
 * database) and returns its schema version; `what` names it in the errors.
 */
export function checkDatabase(file: string, what: string): number {
  const db = openExisting(file);
  try {
    return checkedVersion(db, what, true);
  } finally {
    db.close();
  }
}

/** The schema version of the tether database in `file`. */
export function schemaVersionOf(file: string): number {
  const db = openExisting(file);
  try {
    return checkedVersion(db, file, false);
  } finally {
    db.close();
  }
}

function checkedVersion(db: Db, what: string, checkIntegrity: boolean): number {
  try {
    if (checkIntegrity) {
      const result = db.pragma('integrity_check', { simple: true });
      if (result !== 'ok') throw new BackupError(`${what} fails SQLite's integrity check: ${String(result)}`, 'not_a_database');
    }
    const version = db.pragma('user_version', { simple: true }) as number;
    const users = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'users'").get();
    if (version < 1 || !users) throw new BackupError(`${what} is not a tether database`, 'not_a_database');
    return version;
  } catch (err) {
    if ((err as { code?: string }).code === 'SQLITE_NOTADB') throw new BackupError(`${what} is not a tether database`, 'not_a_database');
    throw err;
  }
}

/**
 * Copies the SQLite database `source` (an open connection, such as a SQLite store's `sqlite`, or
 * a file) to `destination`: a consistent snapshot, checked, in rollback-journal mode (one file,
 * no -wal beside it), mode 0600. Without `overwrite` an existing destination is refused, even
 * one that appears during the copy.
 */
export async function copyDatabase(source: Db | string, destination: string, overwrite: boolean): Promise<DatabaseCopy> {
  const staging = join(dirname(destination), `.${basename(destination)}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    closeSync(openSync(staging, 'wx', 0o600)); // SQLite keeps the mode of a file that exists
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new BackupError(`${dirname(destination)}: no such directory`, 'not_found');
    throw err;
  }
  const what = typeof source === 'string' ? source : 'the database';
  try {
    const from = typeof source === 'string' ? openExisting(source) : source;
    try {
      await from.backup(staging, { progress: () => ALL_PAGES });
    } catch (err) {
      if ((err as { code?: string }).code === 'SQLITE_NOTADB') throw new BackupError(`${what} is not a tether database`, 'not_a_database');
      throw err;
    } finally {
      if (from !== source) from.close();
    }
    const copy = new Database(staging, { fileMustExist: true });
    let schemaVersion: number;
    try {
      schemaVersion = checkedVersion(copy, what, true);
      copy.pragma('journal_mode = DELETE');
    } finally {
      copy.close();
    }
    syncFile(staging);
    placeFile(staging, destination, overwrite);
    syncFile(dirname(destination));
    return { bytes: statSync(destination).size, schemaVersion };
  } finally {
    rmSync(staging, { force: true });
    rmSync(`${staging}-journal`, { force: true });
  }
}

/**
 * Gives `staging` the name `destination`: with `overwrite` in place of any file of that name,
 * else only if that name is free, atomically with a hard link or, on a file system without them
 * (some network shares), by checking first. `exists` is the error for a name that is taken.
 */
export function placeFile(
  staging: string,
  destination: string,
  overwrite: boolean,
  exists = () => new BackupError(`${destination} already exists`, 'exists'),
): void {
  if (overwrite) return renameSync(staging, destination);
  try {
    linkSync(staging, destination);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') throw exists();
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP') throw err;
    if (existsSync(destination)) throw exists();
    renameSync(staging, destination);
  }
}

/** Flushes a file (or a directory, after a name changed in it) to disk. */
export function syncFile(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * Opens `file` for this process alone and keeps it so until the connection closes: no -wal or
 * -shm left beside it, and every other opener waits or fails. Throws `in_use` while anything
 * else has it open, such as a running `tether server`.
 */
export function lockDatabase(file: string): Db {
  const inUse = () => new BackupError(`${file} is in use by another process (a running tether server?): stop it first`, 'in_use');
  const db = new Database(file, { fileMustExist: true, timeout: 200 });
  try {
    db.pragma('locking_mode = EXCLUSIVE');
    // Leaving WAL needs the only connection; SQLite answers the old mode when it cannot.
    if (db.pragma('journal_mode = DELETE', { simple: true }) !== 'delete') throw inUse();
    // A write takes the exclusive lock, and exclusive locking mode keeps it until close.
    db.pragma(`user_version = ${Number(db.pragma('user_version', { simple: true }))}`);
  } catch (err) {
    db.close();
    if (/^SQLITE_(BUSY|LOCKED)/.test(String((err as { code?: unknown }).code))) throw inUse();
    throw err;
  }
  return db;
}
