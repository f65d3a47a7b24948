/**
 * Stores for the tests, on the store the run is testing: SQLite on a real file in a temp dir, or,
 * when TESTRUN_STORE=postgres (the vitest project `postgres`), a fresh database on the test
 * run's PostgreSQL server (test/setup/postgres.ts).
 */
import Database from 'better-sqlite3';
import { join } from 'node:path';
import pg from 'pg';
import { afterEach, beforeEach } from 'vitest';
import { createDatabaseOn } from '../../bench/postgres';
import { openStore, type Store, type StoreLocation } from '../../api/store/index';
import { tempDir } from './temp';

/** True when this run tests the PostgreSQL store. */
export const onPostgres = process.env.TESTRUN_STORE === 'postgres';

/** A fresh, empty database on the test run's PostgreSQL server. */
export async function freshPostgresUrl(): Promise<string> {
  const server = process.env.TESTRUN_POSTGRES_URL;
  if (!server) throw new Error('TESTRUN_POSTGRES_URL is not set: test/setup/postgres.ts starts the server for the run');
  return createDatabaseOn(server);
}

/**
 * Where a fresh store lives on the store under test: a temp data dir, and on PostgreSQL a fresh
 * database (the data dir still holds what is not in the database: recordings, ingress state).
 */
export async function freshStoreLocation(dataDir: string = tempDir()): Promise<StoreLocation> {
  return onPostgres ? { dataDir, databaseUrl: await freshPostgresUrl() } : { dataDir };
}

/** The database of each data dir a test gave a server, so that a restart on that dir finds its data. */
const databaseOfDataDir = new Map<string, Promise<string>>();

/**
 * The environment that points a `tether server` with data dir `dataDir` at its store: nothing on
 * SQLite (the data dir holds it); on PostgreSQL, TETHER_DATABASE_URL of the database that data dir
 * was given first (a fresh one then).
 */
export async function storeEnvFor(dataDir: string): Promise<Record<string, string>> {
  if (!onPostgres) return {};
  let url = databaseOfDataDir.get(dataDir);
  if (!url) databaseOfDataDir.set(dataDir, (url = freshPostgresUrl()));
  return { TETHER_DATABASE_URL: await url };
}

/** A fresh store of the kind under test. */
export async function openTestStore(dataDir?: string): Promise<Store> {
  return openStore(await freshStoreLocation(dataDir));
}

/**
 * A store opened before each test of the file and closed after it. The value returned stands for
 * whichever store the running test has (its properties are read from it), so a test file writes
 * `const store = storeForEachTest()` once at the top of a describe.
 */
export function storeForEachTest(): Store {
  let current: Store | undefined;
  beforeEach(async () => {
    current = await openTestStore();
  });
  afterEach(async () => {
    await current?.close();
    current = undefined;
  });
  return new Proxy({} as Store, {
    get(_target, key) {
      if (!current) throw new Error('the store is open only while a test runs');
      return Reflect.get(current, key);
    },
  });
}

/** The error `work` fails with; fails the test when it succeeds. */
export async function failure(work: () => Promise<unknown>): Promise<unknown> {
  try {
    await work();
  } catch (err) {
    return err;
  }
  throw new Error('expected a failure');
}

/**
 * Runs `sql` directly on the database of the server with data dir `dataDir` (SQLite's file, or its
 * PostgreSQL database): for tests that break or inspect the store underneath a running server.
 */
export async function execOnStore(dataDir: string, sql: string): Promise<void> {
  await queryStore(dataDir, sql);
}

/** The rows `sql` answers on the database of the server with data dir `dataDir` (SQLite's file, or its PostgreSQL database). */
export async function queryStore(dataDir: string, sql: string, params: unknown[] = []): Promise<Record<string, unknown>[]> {
  const url = (await storeEnvFor(dataDir)).TETHER_DATABASE_URL;
  if (url === undefined) {
    const db = new Database(join(dataDir, 'tether.db'));
    try {
      const statement = db.prepare(sql);
      return statement.reader ? (statement.all(...params) as Record<string, unknown>[]) : (statement.run(...params), []);
    } finally {
      db.close();
    }
  }
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => {});
  await client.connect();
  try {
    // `?` placeholders, as SQLite takes them, become $1, $2 …
    let n = 0;
    return (
      await client.query(
        sql.replace(/\?/g, () => `$${++n}`),
        params,
      )
    ).rows as Record<string, unknown>[];
  } finally {
    await client.end();
  }
}
