/**
 * Global setup: every test process, and every agent, server and shell they start, gets an empty
 * temporary HOME. The agents' shells are login shells; with the developer's HOME they would run
 * the developer's dotfiles, which are slow and stateful (a version manager's rehash lock left by
 * a shell the tests killed stalls every later login shell for a minute). Removed at the end.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export default function setup(): () => void {
  // Vitest runs the global setup once for the run and once per project: the first one sets up.
  if (process.env.TESTRUN_HOME !== undefined) return () => {};
  const home = mkdtempSync(join(tmpdir(), 'tether-test-home-'));
  process.env.HOME = home;
  process.env.TESTRUN_HOME = home;
  return function teardown() {
    rmSync(home, { recursive: true, force: true });
  };
}
