/**
 * The masters `tether forward --stdio` starts (detached, so no test helper owns them): found by
 * the pid each writes in its log beside its socket, waited for, and stopped when a test file ends.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { waitFor } from './wait';

/** The socket directory of the masters of clients run with XDG_CONFIG_HOME=`config` (and no XDG_RUNTIME_DIR). */
export const runDirOf = (config: string) => join(config, 'tether', 'run');

/** The pids of the masters whose logs are in `runDir`, as they logged them. */
export function masterPids(runDir: string): number[] {
  if (!existsSync(runDir)) return [];
  return readdirSync(runDir)
    .filter((f) => f.endsWith('.log'))
    .flatMap((f) => [...readFileSync(join(runDir, f), 'utf8').matchAll(/master (\d+) for /g)].map((m) => Number(m[1])));
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Resolves once every master of `runDir` has exited (by itself: its persist time). */
/**
 * Waits for every master to exit on its own. A master a starter spawned but never reached (it
 * found another master first) waits the handshake time, 10 s, for a first client before it
 * goes: the deadline leaves room for that on a loaded machine.
 */
export const mastersGone = (runDir: string, what = 'the forward masters to exit') =>
  waitFor(() => masterPids(runDir).every((pid) => !isAlive(pid)), what, 30_000);

/** SIGTERM to every master still running (it closes its session), SIGKILL to any that lingers. */
export async function stopMasters(runDir: string): Promise<void> {
  for (const pid of masterPids(runDir)) if (isAlive(pid)) process.kill(pid, 'SIGTERM');
  await mastersGone(runDir).catch(() => {
    for (const pid of masterPids(runDir)) if (isAlive(pid)) process.kill(pid, 'SIGKILL');
  });
}
