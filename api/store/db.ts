/**
 * @module Opens the SQLite database: WAL journal, `synchronous=FULL` (a commit survives a power
 * cut, not only a process crash: sessions, tokens and audit are what operators rely on),
 * foreign keys on, and the numbered migrations applied in one transaction each.
 */
import Database from 'better-sqlite3';
import { closeSync, mkdirSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { migrations } from './migrations/index';

export type Db = Database.Database;

export const DB_FILE = 'tether.db';

/** Opens (creating if needed) `<dataDir>/tether.db` with files readable by the owner only. */
export function openDatabase(dataDir: string): Db {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const file = join(dataDir, DB_FILE);
  // Create the file ourselves so it gets mode 0600; SQLite gives -wal and -shm the same mode.
  closeSync(openSync(file, 'a', 0o600));
  const db = new Database(file);
  try {
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    db.pragma('foreign_keys = ON');
    db.pragma('busy_timeout = 5000');
    migrate(db);
  } catch (err) {
    db.close();
    throw err;
  }
  return db;
}

/** Applies every migration newer than the database's `user_version`. */
export function migrate(db: Db): void {
  const current = db.pragma('user_version', { simple: true }) as number;
  const latest = migrations.at(-1)?.version ?? 0;
  if (current > latest) {
    throw new Error(
      `database schema version ${current} is newer than this build understands (${latest}): ` +
        'upgrade tether, or restore a backup made by this version (tether restore FILE)',
    );
  }
  for (const m of migrations) {
    if (m.version <= current) continue;
    db.transaction(() => {
      db.exec(m.sql);
      db.pragma(`user_version = ${m.version}`);
    })();
  }
}
