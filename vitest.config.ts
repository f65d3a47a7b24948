import { defineConfig } from 'vitest/config';

/**
 * Two projects: `sqlite` runs every test on the embedded store; `postgres` runs again every test
 * that reaches the API's store (its units and the end-to-end tests), on PostgreSQL
 * (TESTRUN_STORE=postgres: test/helpers/store.ts gives each a fresh database on the server
 * test/setup/postgres.ts starts). Tests written for one store name it in their file.
 */
/** Tests of several peers on PostgreSQL: nothing in them is SQLite's. */
const PEERS_ONLY = ['test/e2e/peers.test.ts', 'test/e2e/recordings-peers.test.ts', 'test/e2e/jobs-rollout-peers.test.ts'];

export default defineConfig({
  test: {
    globalSetup: ['test/setup/home.ts', 'test/setup/system-packages.ts', 'test/setup/postgres.ts'],
    // Each file in its own process: servers, agents and signal handlers never share state.
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 30_000,
    // expect.poll's default (1 s) is shorter than a loaded machine's Chromium sometimes needs to
    // render what a test waits for; a poll still ends as soon as its condition holds.
    expect: { poll: { timeout: 10_000 } },
    // The end-to-end files start real processes; two cores run a few files at a time.
    maxWorkers: 4,
    projects: [
      // Tests of peers on PostgreSQL name their own stores: they run once, in the `postgres` project.
      { extends: true, test: { name: 'sqlite', include: ['test/**/*.test.ts'], exclude: PEERS_ONLY } },
      {
        extends: true,
        test: {
          name: 'postgres',
          include: ['test/unit/api/**/*.test.ts', 'test/e2e/**/*.test.ts'],
          // db-copy names its own stores (SQLite and a PostgreSQL of its own), and `tether backup`
          // copies SQLite's file (on PostgreSQL it refuses: pg_dump): the `sqlite` project runs them.
          // docker-harness tests the tests' own Docker daemon and checks that none is left on the
          // machine: it reaches no store, and run twice at once it would see the other's daemon.
          exclude: ['test/e2e/db-copy.test.ts', 'test/e2e/backup.test.ts', 'test/e2e/docker-harness.test.ts'],
          env: { TESTRUN_STORE: 'postgres' },
        },
      },
    ],
  },
});
