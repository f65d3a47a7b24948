import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/setup/home.ts', 'test/setup/system-packages.ts'],
    // Each file in its own process: servers, agents and signal handlers never share state.
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 30_000,
    // The end-to-end files start real processes; two cores run a few files at a time.
    maxWorkers: 4,
  },
});
