/**
 * Global setup: one PostgreSQL server for the test run (bench/postgres.ts), its URL in
 * TESTRUN_POSTGRES_URL for every test process. Tests of the PostgreSQL store (the project
 * `postgres`, TESTRUN_STORE=postgres) take a fresh database on it each; tests of peers that
 * stop and start PostgreSQL start their own. Stopped and removed at the end.
 */
import { startPostgres } from '../../bench/postgres';

export default async function setup(): Promise<() => Promise<void>> {
  // Vitest runs the global setup once for the run and once per project: the first one starts it.
  if (process.env.TESTRUN_POSTGRES_URL !== undefined) return async () => {};
  const server = await startPostgres();
  process.env.TESTRUN_POSTGRES_URL = server.url();
  return () => server.close();
}
