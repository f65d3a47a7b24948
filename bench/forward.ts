/**
 * @module Section `forward` (issue 15): bytes and round trips through a forwarded port, with
 * `tether forward` (the real CLI, broker and agent) beside `ssh -L` straight to the sshd and
 * `ssh -J … -L` through it as a jump host, and (issue 35) beside three raw TCP relay processes in
 * series, as the CLI, the broker and the agent are: in Node (`socket.pipe`) and in C (splice(2),
 * the physical limit; `./relay-chain`); all to the same device-side services (helper processes: a
 * sink, a source, an echo). Bulk both ways over one connection, interleaved method by method
 * round after round, the same bytes over 8 connections at once through tether, and 1-byte
 * ping-pong round trips.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { helper, helperResult, type Helper, type Listening } from './helpers';
import { median, percentile, ratioRow, round, startAgent, stopChild, TETHER, tempDir, type Result, type ServerProcess } from './lib';
import { NO_COMPILER, relayChain, spliceRelayBinary, type RelayKind } from './relay-chain';
import { DIRECT, JUMPED, startSshd } from './sshd';

const MiB = 1024 * 1024;
const PARALLEL = 8;
const PING_WARMUP_MS = 3000;

/** The local ports leading to the sink, the source and the echo, however they are forwarded. */
interface Ports {
  sink: number;
  source: number;
  echo: number;
}

interface Method {
  name: string;
  ports: Ports;
  stop(): Promise<void>;
}

const run = helperResult;
const NODE_CHAIN = 'raw TCP relay chain in Node (3 relays)';
const SPLICE_CHAIN = 'C splice relay chain (3 relays)';

const canConnect = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = connect(port, '127.0.0.1', () => {
      s.destroy();
      resolve(true);
    });
    s.on('error', () => resolve(false));
  });

async function freePorts(n: number): Promise<number[]> {
  const { createServer } = await import('node:net');
  const servers = await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<import('node:net').Server>((resolve) => {
          const s = createServer();
          s.listen(0, '127.0.0.1', () => resolve(s));
        }),
    ),
  );
  const ports = servers.map((s) => (s.address() as { port: number }).port);
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  return ports;
}

/** `tether forward` of the three services; resolves once it prints its three lines. */
async function tetherForward(server: ServerProcess, device: string, services: Ports): Promise<Method> {
  const child = spawn(
    process.execPath,
    [TETHER, 'forward', device, `0:127.0.0.1:${services.sink}`, `0:127.0.0.1:${services.source}`, `0:127.0.0.1:${services.echo}`],
    { env: { ...process.env, TETHER_SERVER: server.url, TETHER_TOKEN: server.token }, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const ports = await new Promise<number[]>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      const found = [...out.matchAll(/^forwarding 127\.0\.0\.1:(\d+) /gm)].map((m) => Number(m[1]));
      if (found.length === 3) resolve(found);
    });
    child.once('exit', (code) => reject(new Error(`tether forward exited ${code}`)));
  });
  return { name: 'tether forward', ports: { sink: ports[0]!, source: ports[1]!, echo: ports[2]! }, stop: () => stopChild(child) };
}

/** `ssh -N -L …` of the three services to `host` (the sshd, or the sshd through itself). */
async function sshForward(name: string, options: string[], host: string, services: Ports): Promise<Method> {
  const [sink, source, echo] = await freePorts(3);
  const forwards = [
    [sink, services.sink],
    [source, services.source],
    [echo, services.echo],
  ].flatMap(([local, remote]) => ['-L', `127.0.0.1:${local}:127.0.0.1:${remote}`]);
  const child: ChildProcess = spawn('ssh', ['-N', ...options, ...forwards, host], { stdio: 'ignore' });
  for (let i = 0; i < 200 && !(await canConnect(echo!)); i++) await sleep(25);
  return { name, ports: { sink: sink!, source: source!, echo: echo! }, stop: () => stopChild(child) };
}

/** Three relays of `kind` in series in front of the three services. */
async function relayForward(name: string, kind: RelayKind, services: Ports): Promise<Method> {
  const chain = await relayChain(kind, 3, [services.sink, services.source, services.echo]);
  return { name, ports: { sink: chain.ports[0]!, source: chain.ports[1]!, echo: chain.ports[2]! }, stop: () => chain.stop() };
}

/** MiB/s of `bytes` up to the sink and down from the source over `conns` connections. */
async function bulkOnce(ports: Ports, bytes: number, conns: number) {
  const up = bytes / MiB / (await run<{ seconds: number }>(['tcp-up', String(ports.sink), String(bytes), String(conns)])).seconds;
  const down = bytes / MiB / (await run<{ seconds: number }>(['tcp-down', String(ports.source), String(bytes), String(conns)])).seconds;
  return { up, down };
}

/**
 * Medians of `repeats` runs of `bulkOnce` for each method and each of its connection counts,
 * interleaved (every method once per round) so that drift hits them alike.
 */
async function bulk(methods: Array<{ ports: Ports; plans: number[] }>, bytes: number, repeats: number) {
  const runs = methods.map((m) => m.plans.map(() => ({ up: [] as number[], down: [] as number[] })));
  for (let i = 0; i < repeats; i++) {
    for (const [k, m] of methods.entries()) {
      for (const [p, conns] of m.plans.entries()) {
        const r = await bulkOnce(m.ports, bytes, conns);
        runs[k]![p]!.up.push(r.up);
        runs[k]![p]!.down.push(r.down);
      }
    }
  }
  return runs.map((plans) => plans.map((r) => ({ up: median(r.up), down: median(r.down), runs: r })));
}

async function pingPong(ports: Ports, samples: number, quick: boolean) {
  const { times } = await run<{ times: number[] }>(['tcp-pingpong', String(ports.echo), String(samples), String(quick ? 0 : PING_WARMUP_MS)]);
  return { p50: percentile(times, 50), p99: percentile(times, 99) };
}

type Bulk = { up: number; down: number };

const ratio = (name: string, a: number, b: number, min?: number): Result => ratioRow('forward', name, a, b, min === undefined ? undefined : { min });

/** Issue 35: tether forward's bulk at least 0.8 of the Node relay chain's, each way; the C chain's ratio reported. */
function referenceRatios(tether: Bulk, node: Bulk, splice: Bulk | undefined): Result[] {
  const rows = [
    ratio(`tether forward up / ${NODE_CHAIN} up`, tether.up, node.up, 0.8),
    ratio(`tether forward down / ${NODE_CHAIN} down`, tether.down, node.down, 0.8),
  ];
  if (!splice) return [...rows, { section: 'forward', name: `${SPLICE_CHAIN}: ${NO_COMPILER}`, value: 'skipped', unit: '-', target: '-', met: null }];
  return [
    ...rows,
    ratio(`tether forward up / ${SPLICE_CHAIN} up`, tether.up, splice.up),
    ratio(`tether forward down / ${SPLICE_CHAIN} down`, tether.down, splice.down),
  ];
}

export async function forwardBench(server: ServerProcess, bytes: number, repeats: number, samples: number, quick: boolean): Promise<Result[]> {
  const services: Helper[] = ['tcp-sink', 'tcp-source', 'tcp-echo'].map((mode) => helper([mode]));
  const agent = await startAgent(server, 'bench-forward', tempDir('tether-bench-forward-'));
  const methods: Method[] = [];
  const sshd = quick ? undefined : await startSshd();
  try {
    const [sink, source, echo] = (await Promise.all(services.map((s) => s.next<Listening>()))).map((m) => m.port);
    const targets = { sink: sink!, source: source!, echo: echo! };
    methods.push(await tetherForward(server, 'bench-forward', targets));
    if (sshd) {
      methods.push(await sshForward('ssh -L', sshd.options, DIRECT, targets));
      methods.push(await sshForward('ssh -J -L', sshd.options, JUMPED, targets));
    }
    methods.push(await relayForward(NODE_CHAIN, 'node', targets));
    if (spliceRelayBinary()) methods.push(await relayForward(SPLICE_CHAIN, 'splice', targets));
    const size = `${round(bytes / MiB, 0)} MiB`;
    const of = repeats > 1 ? `, median of ${repeats}` : '';
    // One copy each way first: the first bytes through a fresh process run code V8 has not compiled.
    await bulkOnce(methods[0]!.ports, Math.min(bytes, 64 * MiB), 1);
    // tether: one connection and PARALLEL at once, in turns; the others one connection.
    const bulks = await bulk(
      methods.map((m, i) => ({ ports: m.ports, plans: i === 0 ? [1, PARALLEL] : [1] })),
      bytes,
      repeats,
    );
    const parallel = bulks[0]![1]!;
    const figures: Array<{ m: Method; bulk: (typeof bulks)[number][number]; ping: Awaited<ReturnType<typeof pingPong>> }> = [];
    for (const [i, m] of methods.entries()) figures.push({ m, bulk: bulks[i]![0]!, ping: await pingPong(m.ports, samples, quick) });
    const named = (name: string) => figures.find((f) => f.m.name === name);
    const [tether, direct, jumped] = [figures[0], named('ssh -L'), named('ssh -J -L')];
    const us = (ms: number) => round(ms * 1000, 0);
    const results: Result[] = [];
    for (const f of figures) {
      results.push(
        {
          section: 'forward',
          name: `${f.m.name}: ${size} up, one connection${of}`,
          value: round(f.bulk.up, 0),
          unit: 'MiB/s',
          target: 'reported',
          met: null,
          runs: f.bulk.runs.up.map((r) => round(r, 0)),
        },
        {
          section: 'forward',
          name: `${f.m.name}: ${size} down, one connection${of}`,
          value: round(f.bulk.down, 0),
          unit: 'MiB/s',
          target: 'reported',
          met: null,
          runs: f.bulk.runs.down.map((r) => round(r, 0)),
        },
        {
          section: 'forward',
          name: `${f.m.name}: 1-byte ping-pong p50 (${samples} samples)`,
          value: us(f.ping.p50),
          unit: 'µs',
          target: 'reported',
          met: null,
        },
        { section: 'forward', name: `${f.m.name}: 1-byte ping-pong p99`, value: us(f.ping.p99), unit: 'µs', target: 'reported', met: null },
      );
    }
    results.push(
      {
        section: 'forward',
        name: `tether forward: ${size} up over ${PARALLEL} connections at once${of}`,
        value: round(parallel.up, 0),
        unit: 'MiB/s',
        target: '>= one connection',
        met: parallel.up >= tether!.bulk.up,
        runs: parallel.runs.up.map((r) => round(r, 0)),
      },
      {
        section: 'forward',
        name: `tether forward: ${size} down over ${PARALLEL} connections at once${of}`,
        value: round(parallel.down, 0),
        unit: 'MiB/s',
        target: '>= one connection',
        met: parallel.down >= tether!.bulk.down,
        runs: parallel.runs.down.map((r) => round(r, 0)),
      },
    );
    results.push(...referenceRatios(tether!.bulk, named(NODE_CHAIN)!.bulk, named(SPLICE_CHAIN)?.bulk));
    if (direct && jumped) {
      results.push(
        ratio('tether forward up / ssh -L up', tether!.bulk.up, direct.bulk.up, 1.0),
        ratio('tether forward down / ssh -L down', tether!.bulk.down, direct.bulk.down, 1.0),
        ratio('tether forward up / ssh -J -L up', tether!.bulk.up, jumped.bulk.up, 1.5),
        ratio('tether forward down / ssh -J -L down', tether!.bulk.down, jumped.bulk.down, 1.5),
        {
          section: 'forward',
          name: 'tether forward ping-pong p50 / ssh -J -L p50',
          value: round(tether!.ping.p50 / jumped.ping.p50, 2),
          unit: 'ratio',
          target: '<= 1',
          met: tether!.ping.p50 <= jumped.ping.p50,
        },
      );
    } else {
      results.push({ section: 'forward', name: 'ssh -L and ssh -J -L (no sshd installed, or quick run)', value: 'skipped', unit: '-', target: '-', met: null });
    }
    return results;
  } finally {
    for (const m of methods) await m.stop();
    sshd?.stop();
    await agent.stop();
    await Promise.all(services.map((s) => s.stop()));
  }
}
