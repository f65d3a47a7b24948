/**
 * @module Opens the database, SQLite or PostgreSQL (CONTRACT 10.1), behind one query builder
 * (Kysely), and brings its schema up to date.
 * - SQLite, the embedded default: `<data dir>/tether.db`, WAL journal, `synchronous=FULL` (a
 *   commit survives a power cut, not only a process crash), foreign keys on, the numbered
 *   migrations applied in one transaction each, `PRAGMA user_version` the last applied.
 * - PostgreSQL, for peers: a pool of at most POOL_SIZE connections, each waiting at most
 *   CONNECT_TIMEOUT_MS to connect and STATEMENT_TIMEOUT_MS per statement; the migrations applied
 *   under an advisory lock, so peers starting together migrate once; `schema_version` the last.
 */
import Database from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect } from 'kysely';
import { closeSync, mkdirSync, openSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { postgresMigrations } from './migrations/postgres/index';
import { sqliteMigrations, type Migration } from './migrations/sqlite/index';
import { guardedDialect } from './guarded-driver';
import type { Schema } from './schema';

export type Db = Database.Database;
export type Dialect = 'sqlite' | 'postgres';

export const DB_FILE = 'tether.db';

/** The schema version this build creates and understands, on either store. */
export const LATEST_SCHEMA = sqliteMigrations.at(-1)?.version ?? 0;

/** Connections a peer keeps to PostgreSQL at most; requests beyond wait for one. */
export const POOL_SIZE = 10;
const CONNECT_TIMEOUT_MS = 5000;
const STATEMENT_TIMEOUT_MS = 30_000;
const IDLE_TIMEOUT_MS = 30_000;
/** The advisory lock peers take to migrate one at a time (any constant; "tether" in ASCII). */
const MIGRATION_LOCK = 0x746574686572;

/** Where the data lives: `TETHER_DATABASE_URL` when set (PostgreSQL), else SQLite in `dataDir`. */
export interface StoreLocation {
  dataDir: string;
  databaseUrl?: string | undefined;
}

export interface OpenDatabase {
  dialect: Dialect;
  kysely: Kysely<Schema>;
  /** The SQLite connection (backups copy through it); undefined on PostgreSQL. */
  sqlite: Db | undefined;
  close(): Promise<void>;
}

function tooNew(current: number): Error {
  return new Error(
    `database schema version ${current} is newer than this build understands (${LATEST_SCHEMA}): ` +
      'upgrade tether, or restore a backup made by this version (tether restore FILE)',
  );
}

/** Opens the store named by `location`, creating and migrating it as needed. */
export async function openDatabase(location: StoreLocation): Promise<OpenDatabase> {
  return location.databaseUrl ? openPostgres(location.databaseUrl) : openSqlite(location.dataDir);
}

/** Opens (creating if needed) `<dataDir>/tether.db` with files readable by the owner only. */
export function openSqliteFile(dataDir: string): Db {
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

function openSqlite(dataDir: string): OpenDatabase {
  const sqlite = openSqliteFile(dataDir);
  const kysely = new Kysely<Schema>({ dialect: new SqliteDialect({ database: sqlite }) });
  // Kysely's SQLite driver closes the connection it was given when it is destroyed.
  return { dialect: 'sqlite', kysely, sqlite, close: () => kysely.destroy() };
}

/** Applies every SQLite migration newer than the database's `user_version`. */
export function migrate(db: Db, migrations: readonly Migration[] = sqliteMigrations): void {
  const current = db.pragma('user_version', { simple: true }) as number;
  if (current > LATEST_SCHEMA) throw tooNew(current);
  for (const m of migrations) {
    if (m.version <= current) continue;
    db.transaction(() => {
      db.exec(m.sql);
      db.pragma(`user_version = ${m.version}`);
    })();
  }
}

// BIGINT (20) and NUMERIC (1700: SUM, AVG) arrive as text from pg; tether's integers (byte
// counts, milliseconds, identities) stay below 2^53, so numbers are exact.
const toNumber = (text: string) => Number(text);
const types = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === 20 || oid === 1700 ? toNumber : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
};

/** A pool on `url` with tether's limits; its connection errors are reported, never thrown. */
export function postgresPool(url: string, max = POOL_SIZE): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    idleTimeoutMillis: IDLE_TIMEOUT_MS,
    statement_timeout: STATEMENT_TIMEOUT_MS,
    application_name: 'tether',
    types,
  });
  // An idle connection the server drops emits 'error' on the pool; the next query gets a new one.
  pool.on('error', () => {});
  // A connection in use that the server ends (a restart, pg_terminate_backend) emits 'error' on its
  // client as well as failing its query: the query's failure is what counts (the guarded driver).
  pool.on('connect', (client) => client.on('error', () => {}));
  return pool;
}

async function openPostgres(url: string): Promise<OpenDatabase> {
  const pool = postgresPool(url);
  try {
    await migratePostgres(pool);
  } catch (err) {
    await pool.end();
    throw err;
  }
  const kysely = new Kysely<Schema>({ dialect: guardedDialect(new PostgresDialect({ pool })) });
  return { dialect: 'postgres', kysely, sqlite: undefined, close: () => kysely.destroy() };
}

/** Applies every PostgreSQL migration newer than `schema_version`, one peer at a time. */
export async function migratePostgres(pool: pg.Pool, migrations: readonly Migration[] = postgresMigrations): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    await client.query('CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)');
    const { rows } = await client.query<{ version: number }>('SELECT version FROM schema_version');
    const current = rows[0]?.version ?? 0;
    if (current > LATEST_SCHEMA) throw tooNew(current);
    for (const m of migrations) {
      if (m.version <= current) continue;
      await client.query(m.sql);
    }
    const latest = Math.max(current, migrations.at(-1)?.version ?? 0);
    if (rows.length === 0) await client.query('INSERT INTO schema_version (version) VALUES ($1)', [latest]);
    else await client.query('UPDATE schema_version SET version = $1', [latest]);
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    client.release();
  }
}
