/**
 * A cluster of real processes for the tests (docs/cluster.md): a `nats-server` from the system's
 * packages, configured as the docs say (`tether cluster nats-config`: every node with credentials
 * of its own), a control node (`tether server` with TETHER_NATS_URL) and edge nodes (`tether
 * broker`), all on 127.0.0.1. Everything started here is stopped when the test file ends.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { client, type Client } from './http';
import { runTether, startProcess, startServerProcess, type Proc } from './processes';
import { tempDir } from './stack';
import { systemProgram } from './system-program';
import { waitFor } from './wait';

const natsProcesses = new Set<ChildProcess>();
afterAll(() => {
  for (const child of natsProcesses) child.kill('SIGKILL');
});

/** A port free right now on 127.0.0.1 (for a process that must know its URL before it listens). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export interface NatsServer {
  url: string;
  /** The directory `tether cluster nats-config` wrote (credentials per node), when the bus has them. */
  credsDir: string | undefined;
  /** A node's credentials file (`control`, `edge-1`, …); written on first use. */
  creds(name: string): Promise<string>;
  /** SIGKILL, as a crash would. */
  kill(): Promise<void>;
  /** Starts it again on the same port. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/** Writes (or adds to) the bus's configuration and credentials with the CLI, as docs/cluster.md says. */
async function natsConfig(dir: string, port: number, edges: string[]): Promise<void> {
  const args = ['cluster', 'nats-config', '--out', dir, '--listen', `127.0.0.1:${port}`, ...edges.flatMap((e) => ['--edge', e])];
  const { code, stdout, stderr } = await runTether(args);
  if (code !== 0) throw new Error(`tether cluster nats-config failed (${code}): ${stdout}${stderr}`);
}

/** A `nats-server` on a free loopback port: with per-node credentials (the documented set-up), or `open` (no authentication). */
export async function startNats(options: { open?: boolean } = {}): Promise<NatsServer> {
  const bin = systemProgram(['/usr/sbin/nats-server', '/usr/bin/nats-server'], 'nats-server', 'the cluster tests');
  const port = await freePort();
  const credsDir = options.open ? undefined : tempDir('tether-nats-');
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

export interface Node {
  proc: Proc;
  url: string;
  port: number;
}

export interface Cluster {
  nats: NatsServer;
  control: Node;
  edges: Node[];
  dataDir: string;
  admin: Client;
  adminToken: string;
  env: Record<string, string>;
  /** Starts an edge node (again) on `port` (0: a free one). */
  startEdge(port?: number): Promise<Node>;
  /** Starts the control node (again) on its port and data dir. */
  restartControl(): Promise<Node>;
  stop(): Promise<void>;
}

/** One control node and `edges` edge nodes, with `heartbeatMs` for all of them. */
export async function startCluster(options: { edges: number; heartbeatMs: number; controlEnv?: Record<string, string> }): Promise<Cluster> {
  const nats = await startNats();
  const dataDir = tempDir('tether-cluster-');
  const env = { TETHER_NATS_URL: nats.url, TETHER_HEARTBEAT_MS: String(options.heartbeatMs), TETHER_LOG_LEVEL: 'debug' };
  const controlEnv = { ...env, ...options.controlEnv, TETHER_NATS_CREDS: await nats.creds('control') };
  let control: Node = await startServerProcess(dataDir, controlEnv);
  const adminToken = readFileSync(join(dataDir, 'admin.token'), 'utf8').trim();
  const edges: Node[] = [];

  let edgesMade = 0;
  async function startEdge(port = 0): Promise<Node> {
    const p = port || (await freePort());
    const creds = await nats.creds(`edge-${++edgesMade}`);
    const proc = startProcess(['broker'], { ...env, TETHER_NATS_CREDS: creds, TETHER_LISTEN: `127.0.0.1:${p}`, TETHER_PUBLIC_URL: `http://127.0.0.1:${p}` });
    await proc.waitForLine(/^tether broker listening on /);
    // Ready once the control node knows it: its first heartbeat was answered.
    const url = `http://127.0.0.1:${p}`;
    await waitFor(async () => ((await fetch(`${url}/readyz`)).status === 200 ? true : undefined), 'the edge on the bus', 10_000);
    return { proc, url, port: p };
  }
  for (let i = 0; i < options.edges; i++) edges.push(await startEdge());

  const cluster: Cluster = {
    nats,
    get control() {
      return control;
    },
    edges,
    dataDir,
    admin: client(control.url, adminToken),
    adminToken,
    env,
    startEdge,
    async restartControl() {
      control = await startServerProcess(dataDir, controlEnv, control.port);
      cluster.admin = client(control.url, adminToken);
      return control;
    },
    async stop() {
      await Promise.all([...edges.map((e) => e.proc.stop()), control.proc.stop()]);
      await nats.stop();
    },
  };
  return cluster;
}

/** A metric's value in a node's `/metrics` (the sum of its series), or 0. */
export async function metric(nodeUrl: string, name: string): Promise<number> {
  const text = await (await fetch(`${nodeUrl}/metrics`)).text();
  let sum = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith(`${name} `) || line.startsWith(`${name}{`)) sum += Number(line.split(' ').at(-1));
  }
  return sum;
}

/** A session's stream URL on another node: the same path and ticket, that node's host. */
export function onNode(websocketUrl: string, nodeUrl: string): string {
  const ws = new URL(websocketUrl);
  const node = new URL(nodeUrl);
  ws.host = node.host;
  return ws.toString();
}
