/**
 * @module The HAProxy process of an ingress: found on the system, started as a daemon (it
 * outlives tether, so services keep serving across a tether restart), recognised by its pid file
 * and command line, and stopped by pid. Nothing here kills a process that is not the HAProxy of
 * this run directory's configuration.
 */
import { spawn } from 'node:child_process';
import { accessSync, constants, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { delimiter, join } from 'node:path';
import { IngressError } from './errors';

const WELL_KNOWN = ['/usr/sbin/haproxy', '/usr/local/sbin/haproxy'];
const START_TIMEOUT_MS = 10_000;

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The HAProxy binary: the one given, Debian's, or the first on PATH; else an error naming the package. */
export function findHaproxy(given?: string): string {
  if (given) {
    if (executable(given)) return given;
    throw new IngressError('haproxy_missing', `HAProxy not found at ${given}`);
  }
  const onPath = (process.env.PATH ?? '')
    .split(delimiter)
    .filter(Boolean)
    .map((dir) => join(dir, 'haproxy'));
  const found = [...WELL_KNOWN, ...onPath].find(executable);
  if (found) return found;
  throw new IngressError('haproxy_missing', 'the docker runtime needs HAProxy for its ingress: install the Debian package haproxy (apt-get install haproxy)');
}

/** A free TCP port on `host`, from the kernel. Another program may take it before HAProxy binds it: the caller retries. */
export function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, host, () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/**
 * Starts HAProxy in daemon mode (`-D`): the command returns once the configuration is loaded and
 * the address bound, and the daemon it leaves behind writes its pid to `pidFile`. Resolves with
 * the pid; rejects with HAProxy's own alerts when it refuses.
 */
export function startDaemon(binary: string, configFile: string, pidFile: string): Promise<number> {
  return new Promise((resolve, reject) => {
    // Its own process group from the start: a Ctrl-C meant for tether never reaches it. Only PATH
    // of tether's environment: the daemon has no use for the rest, which may hold secrets.
    const env = { PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin' };
    const child = spawn(binary, ['-D', '-f', configFile, '-p', pidFile], { stdio: ['ignore', 'ignore', 'pipe'], detached: true, env });
    let stderr = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), START_TIMEOUT_MS);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(new IngressError('haproxy_failed', `${binary}: ${err.message}`));
    });
    // 'exit', not 'close': the daemon may keep the inherited stderr open.
    child.once('exit', (code) => {
      clearTimeout(timer);
      child.stderr.destroy();
      const alerts = stderr
        .split('\n')
        .filter((l) => l.includes('[ALERT]'))
        .join('\n');
      if (code !== 0) return reject(new IngressError('haproxy_failed', `HAProxy refused ${configFile} (exit ${code}): ${alerts || stderr.trim()}`));
      const pid = readPid(pidFile);
      if (pid === undefined) return reject(new IngressError('haproxy_failed', `HAProxy started but wrote no pid to ${pidFile}`));
      resolve(pid);
    });
  });
}

/** The pid in a pid file, or undefined. */
export function readPid(pidFile: string): number | undefined {
  try {
    const pid = Number(readFileSync(pidFile, 'utf8').trim().split('\n')[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** True while the process runs (a zombie, dead but not yet reaped, does not count). */
export function isRunning(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    // No procfs (or the process is gone): ask the kernel.
    try {
      process.kill(pid, 0);
      return true;
    } catch (err) {
      return (err as NodeJS.ErrnoException).code === 'EPERM';
    }
  }
}

/** True when `pid` is HAProxy running this configuration file: pid files outlive their processes and pids get reused. */
export function isOurHaproxy(pid: number, configFile: string): boolean {
  try {
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    return isRunning(pid) && argv.includes(configFile) && argv.some((a) => a.endsWith('haproxy'));
  } catch {
    return false;
  }
}

/** SIGTERM (HAProxy's hard stop), then SIGKILL after `graceMs`; resolves once the process is gone. */
export async function stopPid(pid: number, graceMs = 5000): Promise<void> {
  const signal = (sig: NodeJS.Signals) => {
    try {
      process.kill(pid, sig);
    } catch {
      // gone already
    }
  };
  signal('SIGTERM');
  const deadline = Date.now() + graceMs;
  while (isRunning(pid)) {
    if (Date.now() > deadline) {
      signal('SIGKILL');
      if (Date.now() > deadline + graceMs) throw new IngressError('haproxy_failed', `HAProxy (pid ${pid}) did not stop`);
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}
