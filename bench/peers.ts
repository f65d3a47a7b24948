/**
 * @module Section `peers` (issue 31, docs/peers.md), only when named (`--only=peers`): a PostgreSQL and a nats-server of its own, three peers
 * on them and one `tether server` on SQLite. In turns: GET and session-open throughput through SQLite and 1, 2, 3 peers; presence writes of
 * light agents connecting and leaving; a peer SIGKILLed under a load of opens. Each figure says where the CPU went.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { SESSION_OPEN_PER_MINUTE } from '../api/sessions/routes';
import type { IssuedToken } from '../shared/api/identity';
import type { Session } from '../shared/api/sessions';
import { register, sleep } from './cluster-nodes';
import { helper, type Helper } from './helpers';
import { call, median, percentile, pooled, processStats, round, run, startServer, stopChild, tempDir, TETHER } from './lib';
import type { Data, Page, Result, ServerProcess } from './lib';
import { startPostgres } from './postgres';
import { systemProgram } from './system-program';
import { waitFor } from './wait';

/** Seconds per measurement, turns each; GETs at once; per store, devices with a real agent and users; light agents; those pinned to the killed peer. */
export type PeersPlan = Record<'seconds' | 'rounds' | 'clients' | 'devices' | 'users' | 'agents' | 'pinned', number>;

/** A store: the servers on it, its devices with a real agent, its users' tokens (`take`); `count(where)` reads its devices table. */
type System = { nodes: ServerProcess[]; devices: string[]; take: () => string; count: (where: string) => Promise<number> };
/** What is measured: `xacts`, PostgreSQL's transactions so far (pg_stat_database), when it is on PostgreSQL. */
type Config = { name: string; sys: System; urls: string[]; xacts?: () => Promise<number> };
type Cpu = ReturnType<typeof cpuReader>;
type Measure = (c: Config, end: number) => Promise<{ lat: number[]; note: string }>;

const row = (name: string, value: number | string, unit = ''): Result => ({ section: 'peers', name, value, unit, target: 'reported', met: null });
const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
const online = (prefix: string) => `device_id LIKE '${prefix}-%' AND agent_status = 'online'`;
const attempt = <T>(f: () => T): T | undefined => {
  try {
    return f();
  } catch {
    return undefined; // a process that is gone
  }
};

/** nats-server as docs/peers.md sets it up (`tether cluster nats-config`, a credentials file per peer), on a free port (`-p -1`); `owned` gets it. */
async function startBus(dir: string, owned: ChildProcess[]): Promise<{ url: string; child: ChildProcess }> {
  await run(process.execPath, [TETHER, 'cluster', 'nats-config', '--out', dir, '--listen', '127.0.0.1:4222', '--peer', 'a', '--peer', 'b', '--peer', 'c']);
  const bin = systemProgram(['/usr/sbin/nats-server', '/usr/bin/nats-server'], 'nats-server', 'the peers benchmark');
  const child = spawn(bin, ['-c', join(dir, 'nats-server.conf'), '-p', '-1'], { stdio: ['ignore', 'ignore', 'pipe'] });
  owned.push(child);
  let log = '';
  child.stderr!.on('data', (c: Buffer) => (log += c.toString()));
  await waitFor(() => log.includes('Server is ready'), 'nats-server');
  return { url: `nats://127.0.0.1:${/client connections on [\d.]+:(\d+)/.exec(log)![1]}`, child };
}

/** A peer, ready once /readyz answers 200 (database and bus up); `owned` gets it, the caller sets its `token`. */
async function startPeer(name: string, env: Record<string, string>, owned: ChildProcess[]): Promise<ServerProcess> {
  const dataDir = tempDir(`tether-bench-peer-${name}-`);
  env = { ...process.env, TETHER_LISTEN: '127.0.0.1:0', TETHER_DATA_DIR: dataDir, TETHER_LOG_LEVEL: 'warn', ...env };
  const child = spawn(process.execPath, [TETHER, 'server'], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  owned.push(child);
  let out = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  const url = await waitFor(() => /tether listening on (\S+)/.exec(out)?.[1], `peer ${name} to listen`, 30_000);
  await waitFor(async () => (await fetch(`${url}/readyz`)).status === 200, `peer ${name} ready`, 30_000, 50);
  return { url, pid: child.pid!, dataDir, token: '', child, stop: () => stopChild(child) };
}

/** `n` platform engineers with a token each; `take` gives one under its open limit (or, if none is, one that a 429 will show). */
async function userTokens(node: ServerProcess, n: number): Promise<() => string> {
  const made = await pooled([...Array(n).keys()], 16, async (i) => {
    await call(`${node.url}/v1/users`, 'POST', node.token, { username: `bench-${i}`, role: 'platform-engineer', kind: 'service' });
    return (await call<Data<IssuedToken>>(`${node.url}/v1/tokens`, 'POST', node.token, { username: `bench-${i}` })).body.data.token;
  });
  const users = made.flatMap((r) => (r.status === 'fulfilled' ? [{ token: r.value, uses: [] as number[] }] : []));
  const limit = SESSION_OPEN_PER_MINUTE - 5; // in any 61 s: a margin for the retries on another peer (they count twice)
  return () => {
    const now = performance.now();
    const user = users.find((u) => u.uses.length < limit || u.uses[u.uses.length - limit]! < now - 61_000) ?? users[0]!;
    return (user.uses.push(now), user.token);
  };
}

/** Requests round-robin over `urls`; as a load balancer does, a peer that fails and does not answer /readyz is left out. */
function balancer(urls: string[]) {
  const [down, failures] = [new Set<string>(), [] as number[]];
  let next = 0;
  async function send<T>(path: string, method: string, token: string, body?: unknown): Promise<{ status: number; body: T }> {
    for (;;) {
      const url = urls.filter((u) => !down.has(u))[next++ % (urls.length - down.size)];
      if (url === undefined) throw new Error('no peer answers');
      const res = await call<T>(`${url}${path}`, method, token, body).catch(() => undefined);
      if (res) return res;
      failures.push(performance.now());
      if (!(await fetch(`${url}/readyz`).catch(() => undefined))?.ok) down.add(url);
    }
  }
  return { send, failures };
}

/** GET /v1/devices/{id} from `clients` keep-alive clients until `end`, round-robin over the URLs. */
async function gets({ urls, sys }: Config, clients: number, end: number): Promise<{ lat: number[]; note: string }> {
  const lat: number[] = [];
  let [errors, n] = [0, 0];
  const client = async () => {
    for (let t0 = performance.now(), i = n++; t0 < end; t0 = performance.now(), i = n++) {
      const res = await call(`${urls[i % urls.length]}/v1/devices/${sys.devices[i % sys.devices.length]}`, 'GET', sys.nodes[0]!.token);
      lat.push(performance.now() - t0);
      if (res.status !== 200) errors++;
    }
  };
  await Promise.all(Array.from({ length: clients }, client));
  return { lat, note: `${errors} errors` };
}

/** Each device's loop until `stop`: open a diagnostics session, close it; `seen` hears every open. Latencies are the opens'. */
async function opens(sys: System, lb: ReturnType<typeof balancer>, stop: () => boolean, seen = (_s: Session, _at: number) => {}) {
  const [lat, refused, admin] = [[] as number[], new Map<number, number>(), sys.nodes[0]!.token];
  const loop = async (device_id: string) => {
    while (!stop()) {
      const [token, t0] = [sys.take(), performance.now()];
      const o = await lb.send<Data<Session>>('/v1/remote-access/sessions', 'POST', token, { device_id, protocol: 'diagnostics' });
      if (o.status === 201) {
        [lat.push(performance.now() - t0), seen(o.body.data, performance.now())];
        await lb.send(`/v1/remote-access/sessions/${o.body.data.session_id}`, 'DELETE', token);
        continue;
      }
      refused.set(o.status, (refused.get(o.status) ?? 0) + 1); // then a session left open (closed on a dead peer) is closed
      const open = await lb.send<Page<Session>>(`/v1/remote-access/sessions?device_id=${device_id}&status=open`, 'GET', admin);
      for (const s of open.body.data ?? []) await lb.send(`/v1/remote-access/sessions/${s.session_id}`, 'DELETE', admin);
      await sleep(50);
    }
  };
  await Promise.all(sys.devices.map(loop));
  return { lat, note: [...refused].map(([status, k]) => `${k} answered ${status}`).join(', ') || 'none refused' };
}

/** PostgreSQL's processes: the postmaster listening on `port`, and its children. */
function postgresPids(port: number): number[] {
  const procs = readdirSync('/proc').filter((d) => /^\d+$/.test(d));
  const master = procs.find((p) => attempt(() => readFileSync(`/proc/${p}/cmdline`, 'utf8').includes(`\0-p\0${port}\0`)));
  const parent = (p: string) => attempt(() => readFileSync(`/proc/${p}/stat`, 'utf8').split(') ')[1]!.split(' ')[1]);
  return master ? [master, ...procs.filter((p) => parent(p) === master)].map(Number) : [];
}

/** CPU seconds so far of each group of processes, of this one (the clients), of the rest of the machine, and stolen by the hypervisor. */
function cpuReader(groups: Record<string, () => number[]>): () => Record<string, number> {
  return () => {
    const of = (pids: number[]) => sum(pids.map((pid) => attempt(() => processStats(pid).cpuSeconds) ?? 0));
    const [used, self] = [Object.fromEntries(Object.entries(groups).map(([k, pids]) => [k, of(pids())])), process.cpuUsage()];
    used.client = (self.user + self.system) / 1e6;
    const [user, nice, system, , , irq, softirq, steal] = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
    const busy = sum([user!, nice!, system!, irq!, softirq!]) / 100; // processes' time includes some of the interrupts'
    return { ...used, 'other (processes, irq)': busy - sum(Object.values(used)), steal: steal! / 100, wall: performance.now() / 1000 };
  };
}

/** The cores each group used between two readings, the mean over turns: "tether 0.95, postgres 0.60, … (of 2)". */
function cores(turns: Array<Array<Record<string, number>>>): string {
  const mean = (k: string) => sum(turns.map(([b, a]) => (a![k]! - b![k]!) / (a!.wall! - b!.wall!))) / turns.length;
  const used = Object.keys(turns[0]![0]!).filter((k) => k !== 'wall');
  return `${used.map((k) => `${k} ${mean(k).toFixed(2)}`).join(', ')} (of ${cpus().length})`;
}

/** `measure` (until `end`, a performance.now()) for each configuration in turn, `rounds` times: rate (median), ratio to the first, latencies, CPU. */
async function interleaved(what: string, unit: string, configs: Config[], plan: PeersPlan, cpu: Cpu, measure: Measure): Promise<Result[]> {
  const runs = configs.map(() => ({ rates: [] as number[], lat: [] as number[], cpu: [] as Array<Array<Record<string, number>>>, notes: [] as string[] }));
  for (let r = 0; r < plan.rounds; r++) {
    for (const [i, c] of configs.entries()) {
      if (r === 0) await measure(c, performance.now() + Math.min(1, plan.seconds) * 1000); // warm-up: JIT, pools, caches
      const [before, x0, t0] = [cpu(), await c.xacts?.(), performance.now()];
      const out = await measure(c, performance.now() + plan.seconds * 1000);
      if (x0 !== undefined) out.note += `, ${round(((await c.xacts!()) - x0) / out.lat.length, 1)} PostgreSQL transactions each`;
      const [seconds, turn] = [(performance.now() - t0) / 1000, runs[i]!];
      [turn.rates.push(out.lat.length / seconds), turn.lat.push(...out.lat), turn.cpu.push([before, cpu()]), turn.notes.push(out.note)];
    }
  }
  return configs.flatMap(({ name }, i) => {
    const { rates, lat, notes, cpu: used } = runs[i]!;
    lat.sort((a, b) => a - b);
    return [
      { ...row(`${what}, ${name}`, round(median(rates), 0), unit), runs: rates.map((x) => round(x, 0)) },
      ...(i === 0 ? [] : [row(`${what}, ${name} / ${configs[0]!.name}`, round(median(rates) / median(runs[0]!.rates), 2), 'x')]),
      row(`${what}, ${name}: latency`, `p50 ${round(percentile(lat, 50), 1)} ms, p99 ${round(percentile(lat, 99), 1)} ms; ${[...new Set(notes)].join(' / ')}`),
      row(`${what}, ${name}: CPU in cores, mean of the turns`, cores(used)),
    ];
  });
}

/** `n` light agents (./swarm `agents`, three helpers) connect, then leave: writes/s in the database from the first change seen to the last. */
async function presence(name: string, sys: System, n: number, helpers: Helper[], cpu: Cpu): Promise<Result[]> {
  const prefix = `presence-${sys.nodes.length}`;
  const [devices, dir] = [await register(sys.nodes[0]!, prefix, n), tempDir('tether-bench-presence-')];
  const rate = async (to: number) => {
    let first = { k: n - to, at: 0 };
    const changed = (k: number) => (first.at === 0 && k !== n - to && (first = { k, at: performance.now() }), k === to);
    await waitFor(async () => changed(await sys.count(online(prefix))), `${to} of ${n} agents online`, 120_000, 20);
    return round(Math.abs(to - first.k) / ((performance.now() - first.at) / 1000), 0);
  };
  const [before, t0] = [cpu(), performance.now()];
  const started = [0, 1, 2].map((i) => {
    writeFileSync(join(dir, `${i}.json`), JSON.stringify(devices.filter((_, j) => j % 3 === i)));
    return helper(['agents', sys.nodes[i % sys.nodes.length]!.url, join(dir, `${i}.json`)], () => {});
  });
  helpers.push(...started);
  const up = await rate(n);
  const [all, used] = [round((performance.now() - t0) / 1000, 2), cores([[before, cpu()]])]; // while the helpers live
  await Promise.all(started.map((h) => h.stop()));
  const down = await rate(0);
  return [
    row(`presence, ${name}: ${n} agents connect, connects written (all online ${all} s after the start)`, up, 'writes/s'),
    row(`presence, ${name}: they leave, disconnects written`, down, 'writes/s'),
    row(`presence, ${name}: CPU in cores while they connect`, used),
  ];
}

/** SIGKILL of peer a (the first: it holds the housekeeping lock) under opens over the three; the pinned agents know only a. */
async function killPeer(sys: System, plan: PeersPlan, helpers: Helper[]): Promise<Result[]> {
  const [a, file] = [sys.nodes[0]!, join(tempDir('tether-bench-pinned-'), 'pinned.json')];
  writeFileSync(file, JSON.stringify(await register(a, 'pinned', plan.pinned)));
  helpers.push(helper(['agents', a.url, file], () => {}));
  const stale = `${online('pg')} AND presence_url = '${a.url}'`;
  await waitFor(async () => (await sys.count(online('pinned'))) === plan.pinned && (await sys.count(stale)) > 0, 'the agents on peer a', 60_000);
  const [held, lb, seen] = [await sys.count(stale), balancer(sys.nodes.map((n) => n.url)), [] as Array<{ at: number; dead: boolean }>];
  const onOpen = (s: Session, at: number) => seen.push({ at, dead: s.websocket_url?.startsWith(a.url.replace('http', 'ws')) === true });
  let stopAt = Infinity;
  const load = opens(sys, lb, () => performance.now() >= stopAt, onOpen);
  await sleep(plan.seconds * 1000);
  a.child.kill('SIGKILL');
  const killedAt = performance.now();
  const gone = (where: string) => waitFor(async () => (await sys.count(where)) === 0 && round((performance.now() - killedAt) / 1000, 2), where, 60_000, 100);
  const [moved, offline] = await Promise.all([gone(stale), gone(online('pinned'))]);
  stopAt = performance.now() + 2000;
  const { note } = await load;
  const failed = lb.failures.filter((t) => t >= killedAt && t < stopAt);
  const dead = seen.filter((o) => o.at >= killedAt && o.dead).map((o) => o.at);
  const rate = (from: number, to: number) => round(seen.filter((o) => o.at >= from && o.at < to).length / ((to - from) / 1000), 0);
  const last = (xs: number[]) => `${xs.length}, the last ${xs.length === 0 ? '-' : round((Math.max(...xs) - killedAt) / 1000, 2)} s after`;
  return [
    row('kill: requests that failed on the dead peer (then sent to another)', last(failed)),
    row("kill: opens that named the dead peer's stream URL (stale presence)", last(dead)),
    row(`kill: the ${held} real agents on it online on another peer after`, moved, 's'),
    row(`kill: the ${plan.pinned} agents pinned to it shown offline after (housekeeping)`, offline, 's'),
    row(`kill: opens/s before (3 peers) / last 2 s (2 peers); ${note}`, `${rate(killedAt - plan.seconds * 1000, killedAt)} / ${rate(stopAt - 2000, stopAt)}`),
  ];
}

export async function peersBench(plan: PeersPlan): Promise<Result[]> {
  const [postgres, helpers, nodes, owned] = [await startPostgres(), [] as Helper[], [] as ServerProcess[], [] as ChildProcess[]];
  let [db, file]: [pg.Client?, Database.Database?] = [];
  try {
    const [databaseUrl, natsDir] = [await postgres.createDatabase(), tempDir('tether-bench-nats-')];
    const bus = await startBus(natsDir, owned);
    nodes.push(await startServer());
    const env = (name: string) => ({ TETHER_DATABASE_URL: databaseUrl, TETHER_NATS_URL: bus.url, TETHER_NATS_CREDS: join(natsDir, `peer-${name}.creds`) });
    for (const name of ['a', 'b', 'c']) nodes.push(await startPeer(name, env(name), owned));
    const [sqlite, ...peers] = nodes as [ServerProcess, ...ServerProcess[]];
    for (const p of peers) p.token = readFileSync(join(peers[0]!.dataDir, 'admin.token'), 'utf8').trim();
    [db, file] = [new pg.Client({ connectionString: databaseUrl }), new Database(join(sqlite.dataDir, 'tether.db'), { readonly: true, fileMustExist: true })];
    await db.connect();
    const [pgDb, liteDb, sql] = [db, file, (where: string) => `SELECT count(*) AS n FROM devices WHERE ${where}`];
    const counts = {
      lite: async (where: string) => (liteDb.prepare(sql(where)).get() as { n: number }).n,
      pg: async (where: string) => Number((await pgDb.query<{ n: string }>(sql(where))).rows[0]!.n),
    };
    // Devices with real agents (./swarm `real-agents`), each starting on its own node and knowing the others.
    const system = async (on: ServerProcess[], prefix: 'lite' | 'pg'): Promise<System> => {
      const [devices, dir, take] = [await register(on[0]!, prefix, plan.devices), tempDir('tether-bench-agents-'), await userTokens(on[0]!, plan.users)];
      on.forEach((_, i) => {
        writeFileSync(join(dir, `${i}.json`), JSON.stringify(devices.filter((_d, j) => j % on.length === i)));
        helpers.push(helper(['real-agents', [...on.slice(i), ...on.slice(0, i)].map((x) => x.url).join(','), join(dir, `${i}.json`), join(dir, `s${i}`)]));
      });
      await waitFor(async () => (await counts[prefix](online(prefix))) === plan.devices, `${prefix} agents online`, 60_000, 50);
      return { nodes: on, devices: devices.map((d) => d.id), take, count: counts[prefix] };
    };
    const [lite, shared] = [await system([sqlite], 'lite'), await system(peers, 'pg')];
    const groups = { tether: () => nodes.map((n) => n.pid), postgres: () => postgresPids(postgres.port), nats: () => [bus.child.pid!] };
    const cpu = cpuReader({ ...groups, agents: () => helpers.map((h) => h.child.pid!) });
    const xacts = async () => Number((await pgDb.query('SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()')).rows[0].xact_commit);
    const configs: Config[] = [
      { name: 'SQLite, 1 process', sys: lite, urls: [sqlite.url] },
      ...[1, 2, 3].map((n) => ({ name: `PostgreSQL, ${n} peer${n > 1 ? 's' : ''}`, sys: shared, urls: peers.slice(0, n).map((p) => p.url), xacts })),
    ];
    return [
      ...(await interleaved('GET /v1/devices/{id}', 'req/s', configs, plan, cpu, (c, end) => gets(c, plan.clients, end))),
      ...(await interleaved('session open + close', 'opens/s', configs, plan, cpu, (c, end) => opens(c.sys, balancer(c.urls), () => performance.now() >= end))),
      ...(await presence('SQLite, 1 process', lite, plan.agents, helpers, cpu)),
      ...(await presence('PostgreSQL, 3 peers', shared, plan.agents, helpers, cpu)),
      ...(await killPeer(shared, plan, helpers)),
    ];
  } finally {
    await Promise.all(helpers.map((h) => h.stop()));
    file?.close();
    await db?.end().catch(() => {});
    await Promise.all(nodes.map((n) => n.stop()));
    await Promise.all(owned.map((child) => stopChild(child))); // nats-server, and a peer that did not start
    await postgres.close();
  }
}
