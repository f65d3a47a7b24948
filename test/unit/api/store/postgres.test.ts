/**
 * The PostgreSQL store (CONTRACT 10.1), whichever store the run tests: peers opening one database
 * at once migrate it once; a newer schema is refused; a statement that loses its connection is
 * retried on a fresh one when it is a read outside a transaction, and otherwise fails as
 * `DatabaseUnavailableError` (503); a database that stops and comes back is used again without
 * reopening anything.
 */
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPostgres, type Postgres } from '../../../../bench/postgres';
import { LATEST_SCHEMA } from '../../../../api/store/db';
import { DatabaseUnavailableError, isDatabaseUnavailable } from '../../../../api/store/errors';
import { openStore, type Store } from '../../../../api/store/index';
import { failure, freshPostgresUrl } from '../../../helpers/store';
import { tempDir } from '../../../helpers/temp';
import { waitFor } from '../../../helpers/wait';

const open = (url: string) => openStore({ dataDir: tempDir(), databaseUrl: url });

async function query<T>(url: string, text: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => {});
  await client.connect();
  try {
    return (await client.query(text, values)).rows as T[];
  } finally {
    await client.end();
  }
}

describe('the PostgreSQL store', () => {
  it('is migrated once by peers that open it at the same moment', async () => {
    const url = await freshPostgresUrl();
    const stores = await Promise.all([open(url), open(url), open(url)]);
    try {
      expect(await query<{ version: number }>(url, 'SELECT version FROM schema_version')).toEqual([{ version: LATEST_SCHEMA }]);
      // all three see one database: what one writes the others read
      await stores[0]!.users.insert({ username: 'ann', role: 'administrator', kind: 'human', created_at: '2026-01-01T00:00:00Z' }, null);
      for (const store of stores) expect(await store.users.get('ann')).toMatchObject({ role: 'administrator' });
      // one secret for every peer, whichever asked first
      const secrets = await Promise.all(stores.map((s) => s.secret('shared')));
      for (const secret of secrets) expect(secret.equals(secrets[0]!)).toBe(true);
    } finally {
      await Promise.all(stores.map((s) => s.close()));
    }
  });

  it('refuses a database whose schema is newer than this build', async () => {
    const url = await freshPostgresUrl();
    await (await open(url)).close();
    await query(url, 'UPDATE schema_version SET version = $1', [LATEST_SCHEMA + 1]);
    await expect(open(url)).rejects.toThrow(/newer than this build understands/);
  });

  describe('when the database goes away', () => {
    let server: Postgres;
    let store: Store;
    beforeAll(async () => {
      server = await startPostgres();
      store = await open(await server.createDatabase());
      await store.users.insert({ username: 'ann', role: 'administrator', kind: 'human', created_at: '2026-01-01T00:00:00Z' }, null);
    });
    afterAll(async () => {
      await store?.close();
      await server?.close();
    });

    /** Runs `statement` on the store and ends its connection from outside while it runs; its outcome. */
    async function cutOff(statement: Promise<unknown>): Promise<unknown> {
      const outcome = statement.then(
        (value) => ({ value }),
        (error: unknown) => ({ error }),
      );
      const marker = 'tether-cut-off-test';
      await waitFor(
        async () =>
          (await query<{ n: number }>(server.url(), 'SELECT count(*)::int AS n FROM pg_stat_activity WHERE query LIKE $1', [`%${marker}%`]))[0]!.n >= 1,
        'the statement to run',
      );
      await query(server.url(), "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE $1 AND query NOT LIKE '%pg_terminate_backend%'", [
        `%${marker}%`,
      ]);
      const settled = await outcome;
      if ('error' in settled) throw settled.error;
      return settled.value;
    }

    it('retries a read that lost its connection on a fresh one', async () => {
      const read = sql<{ slept: number }>`SELECT 1 AS slept FROM pg_sleep(0.5) WHERE 'tether-cut-off-test' IS NOT NULL`.execute(store.db);
      const result = (await cutOff(read)) as { rows: { slept: number }[] };
      expect(result.rows).toEqual([{ slept: 1 }]);
    });

    it('fails a write that lost its connection as unavailable, never retrying it', async () => {
      const write = sql`UPDATE users SET kind = kind WHERE 'tether-cut-off-test' IS NOT NULL AND pg_sleep(0.5) IS NOT NULL`.execute(store.db);
      const err = await failure(() => cutOff(write));
      expect(err).toBeInstanceOf(DatabaseUnavailableError);
      expect((err as DatabaseUnavailableError).code).toBe('unavailable');
    });

    it('answers unavailable while it is stopped, and works again once it is back', async () => {
      await server.stop();
      const down = await failure(() => store.users.get('ann'));
      expect(isDatabaseUnavailable(down)).toBe(true);
      await expect(store.ping()).rejects.toBeInstanceOf(DatabaseUnavailableError);
      await server.start();
      expect(await store.users.get('ann')).toMatchObject({ role: 'administrator' });
    });
  });
});
