/**
 * A `nats-server` from the system's packages for the tests (docs/cluster.md), on a free loopback
 * port: configured as the docs say (`tether cluster nats-config`: every node with credentials of
 * its own), or open. It imports no product code, so the cluster's unit tests can use it without
 * the rest of the server. Everything started here is stopped when the test file ends.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { runTether } from './processes';
import { systemProgram } from './system-program';
import { waitFor } from './wait';
import { freePort } from '../../bench/free-port';

export { freePort };

const dirs: string[] = [];
const natsProcesses = new Set<ChildProcess>();
afterAll(() => {
  for (const child of natsProcesses) child.kill('SIGKILL');
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A port free right now on 127.0.0.1 (for a process that must know its URL before it listens). */

export interface NatsServer {
  url: string;
  /** The directory `tether cluster nats-config` wrote (credentials per node), when the bus has them. */
  credsDir: string | undefined;
  /** A node's credentials file (`control`, `edge-1`, `peer-a`, …); written on first use. */
  creds(name: string): Promise<string>;
  /** SIGKILL, as a crash would. */
  kill(): Promise<void>;
  /** Starts it again on the same port. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/** Writes (or adds to) the bus's configuration and credentials with the CLI, as docs/cluster.md says. */
async function natsConfig(dir: string, port: number, nodes: string[]): Promise<void> {
  // `peer-NAME` is a peer's (docs/peers.md), anything else an edge's.
  const flags = nodes.flatMap((n) => (n.startsWith('peer-') ? ['--peer', n] : ['--edge', n]));
  const args = ['cluster', 'nats-config', '--out', dir, '--listen', `127.0.0.1:${port}`, ...flags];
  const { code, stdout, stderr } = await runTether(args);
  if (code !== 0) throw new Error(`tether cluster nats-config failed (${code}): ${stdout}${stderr}`);
}

/** A `nats-server` on a free loopback port: with per-node credentials (the documented set-up), or `open` (no authentication). */
export async function startNats(options: { open?: boolean } = {}): Promise<NatsServer> {
  const bin = systemProgram(['/usr/sbin/nats-server', '/usr/bin/nats-server'], 'nats-server', 'the cluster tests');
  const port = await freePort();
  const credsDir = options.open ? undefined : mkdtempSync(join(tmpdir(), 'tether-nats-'));
  if (credsDir) dirs.push(credsDir);
  if (credsDir) await natsConfig(credsDir, port, []);
  let child: ChildProcess | undefined;
  const run = async () => {
    const args = credsDir ? ['-c', join(credsDir, 'nats-server.conf')] : ['-a', '127.0.0.1', '-p', String(port)];
    const proc = spawn(bin, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    natsProcesses.add(proc);
    let log = '';
    proc.stderr!.on('data', (c: Buffer) => (log += c.toString()));
    proc.once('exit', () => natsProcesses.delete(proc));
    await waitFor(() => /Server is ready/.test(log) || undefined, 'nats-server ready', 10_000);
    child = proc;
  };
  const kill = async (signal: NodeJS.Signals) => {
    const proc = child;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    const gone = new Promise((resolve) => proc.once('exit', resolve));
    proc.kill(signal);
    await gone;
  };
  await run();
  return {
    url: `nats://127.0.0.1:${port}`,
    credsDir,
    async creds(name: string) {
      if (!credsDir) throw new Error('this bus has no credentials');
      const file = join(credsDir, `${name}.creds`);
      if (!existsSync(file)) await natsConfig(credsDir, port, [name]);
      return file;
    },
    kill: () => kill('SIGKILL'),
    restart: run,
    stop: () => kill('SIGTERM'),
  };
}
