/**
 * A cluster of real processes for the tests (docs/cluster.md): a `nats-server` from the system's
 * packages, configured as the docs say (`tether cluster nats-config`: every node with credentials
 * of its own), a control node (`tether server` with TETHER_NATS_URL) and edge nodes (`tether
 * broker`), all on 127.0.0.1. Everything started here is stopped when the test file ends.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { client, type Client } from './http';
import { freePort, startNats, type NatsServer } from './nats';
import { SERVER_START_MS, startProcess, startServerProcess, type Proc } from './processes';
import { tempDir } from './stack';
import { waitFor } from './wait';

export { freePort, startNats, type NatsServer } from './nats';

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
    await proc.waitForLine(/^tether broker listening on /, SERVER_START_MS);
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
