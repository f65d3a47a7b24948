/**
 * Peers for the end-to-end tests (docs/peers.md): a PostgreSQL server of the test's own (so a test
 * may stop it), a NATS bus with a credentials file per peer, and `tether server` processes on both,
 * each with its own data dir and public URL. `stop()` ends everything it started.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startPostgres, type Postgres } from '../../bench/postgres';
import { client, type Client } from './http';
import { startNats, freePort, type NatsServer } from './nats';
import { startServerProcess, type Proc } from './processes';
import { tempDir } from './temp';
import { waitFor } from './wait';

export interface PeerNode {
  name: string;
  proc: Proc;
  url: string;
  port: number;
  dataDir: string;
}

export interface Peers {
  postgres: Postgres;
  databaseUrl: string;
  nats: NatsServer;
  peers: PeerNode[];
  adminToken: string;
  /** A client of peer `i` with the administrator's token. */
  admin(i: number): Client;
  /** Starts one more peer (or peer `name` again, on its old port and data dir). */
  startPeer(name: string, again?: PeerNode): Promise<PeerNode>;
  stop(): Promise<void>;
}

export async function startPeers(n: number, env: Record<string, string> = {}): Promise<Peers> {
  const postgres = await startPostgres();
  const databaseUrl = await postgres.createDatabase();
  const nats = await startNats();
  const started: PeerNode[] = [];

  async function startPeer(name: string, again?: PeerNode): Promise<PeerNode> {
    const port = again?.port ?? (await freePort());
    const dataDir = again?.dataDir ?? tempDir(`tether-${name}-`);
    const { proc, url } = await startServerProcess(
      dataDir,
      {
        TETHER_DATABASE_URL: databaseUrl,
        TETHER_NATS_URL: nats.url,
        TETHER_NATS_CREDS: await nats.creds(name),
        TETHER_PUBLIC_URL: `http://127.0.0.1:${port}`,
        TETHER_LOG_LEVEL: 'debug',
        ...env,
      },
      port,
    );
    // Ready once it answers /readyz: its database and its bus are up.
    await waitFor(async () => (await fetch(`${url}/readyz`)).status === 200, `${name} ready`, 15_000);
    const node = { name, proc, url, port, dataDir };
    started.push(node);
    return node;
  }

  try {
    const peers: PeerNode[] = [];
    for (let i = 0; i < n; i++) peers.push(await startPeer(`peer-${String.fromCharCode(97 + i)}`));
    const adminToken = readFileSync(join(peers[0]!.dataDir, 'admin.token'), 'utf8').trim();
    return {
      postgres,
      databaseUrl,
      nats,
      peers,
      adminToken,
      admin: (i) => client(peers[i]!.url, adminToken),
      startPeer,
      async stop() {
        await Promise.all(started.map((p) => p.proc.stop()));
        await nats.stop();
        await postgres.close();
      },
    };
  } catch (err) {
    await Promise.all(started.map((p) => p.proc.stop()));
    await nats.stop();
    await postgres.close();
    throw err;
  }
}
