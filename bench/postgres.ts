/**
 * @module A PostgreSQL server of our own, from Debian's `postgresql` package, for the tests and
 * benchmarks of peers (CONTRACT 10.1): its cluster in a temp dir, on a free loopback port, run as
 * the `postgres` user when we are root (PostgreSQL refuses root), started and stopped by pid.
 * Durability is off (fsync, full pages): these databases live as long as a test run.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { systemProgram } from './system-program';
import { waitFor } from './wait';
import { freePort } from './free-port';

export interface Postgres {
  port: number;
  /** A URL of database `database` on this server (default: the `postgres` database). */
  url(database?: string): string;
  /** Creates an empty database with a fresh name and returns its URL. */
  createDatabase(): Promise<string>;
  /** Stops the server (fast shutdown: sessions end, nothing committed is lost). */
  stop(): Promise<void>;
  /** Starts it again after `stop`, on the same port and data. */
  start(): Promise<void>;
  /** Stops it and removes its files. */
  close(): Promise<void>;
}

const VERSIONS = ['18', '17', '16', '15', '14', '13'];

/** The directory of PostgreSQL's server programs (initdb, postgres), installing the package if we may. */
export function postgresBin(): string {
  const root = '/usr/lib/postgresql';
  const installed = existsSync(root) ? readdirSync(root).sort().reverse() : [];
  const candidates = [...installed, ...VERSIONS].map((v) => join(root, v, 'bin', 'postgres'));
  const server = systemProgram(candidates, 'postgresql', 'the tests and benchmarks of peers on PostgreSQL');
  return join(server, '..');
}

/** The uid and gid of the `postgres` user, when we are root; undefined otherwise. */
function runAs(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const id = (flag: string) => Number(spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' }).stdout.trim());
  return { uid: id('-u'), gid: id('-g') };
}

async function answers(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

let databases = 0;

/** Initialises a cluster in a temp dir and starts PostgreSQL on a free loopback port. */
export async function startPostgres(): Promise<Postgres> {
  const bin = postgresBin();
  const user = runAs();
  const dir = mkdtempSync(join(tmpdir(), 'tether-postgres-'));
  if (user) chownSync(dir, user.uid, user.gid);
  const data = join(dir, 'data');
  const init = spawnSync(join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '--auth=trust', '--encoding=UTF8', '--locale=C', '--no-sync'], {
    encoding: 'utf8',
    ...user,
  });
  if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr.trim()}`);

  let port = 0;
  let child: ChildProcess | undefined;
  const url = (database = 'postgres') => `postgres://postgres@127.0.0.1:${port}/${database}`;

  async function launch(): Promise<void> {
    const args = ['-D', data, '-h', '127.0.0.1', '-p', String(port), '-k', dir];
    for (const setting of ['fsync=off', 'full_page_writes=off', 'synchronous_commit=off', 'max_connections=400', 'shared_buffers=32MB'])
      args.push('-c', setting);
    const proc = spawn(join(bin, 'postgres'), args, { stdio: ['ignore', 'ignore', 'pipe'], ...user });
    let log = '';
    proc.stderr!.setEncoding('utf8').on('data', (text: string) => (log = (log + text).slice(-4000)));
    proc.on('error', () => {});
    child = proc;
    const outcome = await waitFor(
      async () => (proc.exitCode !== null || proc.signalCode !== null ? 'exited' : (await answers(url())) && 'ready'),
      'PostgreSQL to accept connections',
      30_000,
      50,
    );
    if (outcome === 'exited') throw new Error(`postgres exited (${proc.exitCode ?? proc.signalCode}): ${log.trim()}`);
  }

  async function stop(): Promise<void> {
    const proc = child;
    child = undefined;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
    proc.kill('SIGINT'); // fast shutdown
    const timer = setTimeout(() => proc.kill('SIGKILL'), 20_000);
    await exited;
    clearTimeout(timer);
  }

  for (let attempt = 1; ; attempt++) {
    port = await freePort();
    try {
      await launch();
      break;
    } catch (err) {
      await stop();
      if (attempt >= 3) {
        rmSync(dir, { recursive: true, force: true });
        throw err;
      }
    }
  }

  return {
    get port() {
      return port;
    },
    url,
    createDatabase: () => createDatabaseOn(url()),
    stop,
    start: launch,
    async close() {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * The server the test run shares (test/setup/postgres.ts starts it and puts its URL in
 * TESTRUN_POSTGRES_URL): a fresh empty database on it, by URL.
 */
export async function createDatabaseOn(serverUrl: string): Promise<string> {
  const name = `tether_${process.pid}_${++databases}_${Date.now().toString(36)}`;
  const client = new pg.Client({ connectionString: serverUrl });
  client.on('error', () => {});
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${name}`);
  } finally {
    await client.end();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}
