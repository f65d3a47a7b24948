/**
 * @module Section 1 and 5: `tether cp` of a large file from and to a device through the real
 * CLI, agent and broker; the same bytes through bare WebSocket processes (a three-process relay,
 * the limit, and a two-process single hop, the limit of one hop) and through the relay's splice
 * alone; OpenSSH `scp` to a private sshd, directly and through a jump host, when one is
 * installed; the server's CPU per GiB beside the bare relay process's; and memory: the server's
 * and the agent's RSS growth while the bytes stream through them, and the agent's idle RSS beside
 * a bare `node` idling.
 */
import { spawn } from 'node:child_process';
import { closeSync, openSync, rmSync, statSync, writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { median, memoryDir, processStats, round, run, startAgent, stopChild, TETHER, type Result, type ServerProcess } from './lib';
import { DIRECT, JUMPED, startSshd } from './sshd';
import { bareRelay, relaySplice, singleHop } from './transfer-references';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

function makeFile(path: string, bytes: number): void {
  const block = randomBytes(MiB);
  const fd = openSync(path, 'w');
  for (let done = 0; done < bytes; done += MiB) writeSync(fd, block, 0, Math.min(MiB, bytes - done));
  closeSync(fd);
}

/**
 * Runs `fn` while sampling the RSS of each of `pids` every 25 ms; the seconds taken and, per
 * process, its peak RSS growth and the CPU seconds it spent.
 */
async function watched(pids: number[], fn: () => Promise<void>) {
  const before = pids.map((pid) => processStats(pid));
  const peaks = before.map((s) => s.rss);
  const sample = () => pids.forEach((pid, i) => (peaks[i] = Math.max(peaks[i]!, processStats(pid).rss)));
  const sampler = setInterval(sample, 25);
  const t0 = performance.now();
  try {
    await fn();
  } finally {
    clearInterval(sampler);
  }
  const seconds = (performance.now() - t0) / 1000;
  const usage = pids.map((pid, i) => ({ growth: peaks[i]! - before[i]!.rss, cpuSeconds: processStats(pid).cpuSeconds - before[i]!.cpuSeconds }));
  return { seconds, usage };
}

interface Repeated {
  value: number;
  runs: number[];
}

/** Runs `measure` `times` times in a row; per figure it returns, the median and every run's value. */
async function repeated<K extends string>(times: number, measure: () => Promise<Record<K, number>>): Promise<Record<K, Repeated>> {
  const all: Array<Record<K, number>> = [];
  for (let i = 0; i < times; i++) all.push(await measure());
  const figures = Object.keys(all[0]!) as K[];
  return Object.fromEntries(figures.map((k) => [k, { value: median(all.map((r) => r[k])), runs: all.map((r) => r[k]) }])) as Record<K, Repeated>;
}

/** A transfer row for a median, its runs rounded like its value. */
function figure(name: string, m: Repeated, digits: number, unit: string, target: string, met: boolean | null): Result {
  return { section: 'transfer', name, value: round(m.value, digits), unit, target, met, runs: m.runs.map((r) => round(r, digits)) };
}

/** A transfer row for `a / b`, with `>= min` as its target when there is one. */
function ratio(name: string, a: number, b: number, min?: number): Result {
  const r = a / b;
  return {
    section: 'transfer',
    name,
    value: round(r, 2),
    unit: 'ratio',
    target: min === undefined ? 'reported' : `>= ${min.toFixed(1)}`,
    met: min === undefined ? null : r >= min,
  };
}

/** true when every check passed, false when one failed, null when none failed but some could not be made. */
function allMet(checks: Array<boolean | null>): boolean | null {
  if (checks.includes(false)) return false;
  return checks.includes(null) ? null : true;
}

/**
 * Issue 14's targets for one direction of `tether cp`: at least 0.8 of the bare relay, 1.0 of
 * direct scp and 1.5 of scp through the jump host (unchecked when there is no sshd).
 */
function cpTargets(
  way: 'from' | 'to',
  rate: number,
  bare: number,
  scp?: { direct: number; jumped: number },
): { checks: Array<boolean | null>; rows: Result[] } {
  const rows = [ratio(`tether cp ${way} / bare relay`, rate, bare, 0.8)];
  if (scp) rows.push(ratio(`tether cp ${way} / scp ${way}`, rate, scp.direct, 1.0), ratio(`tether cp ${way} / scp -J ${way}`, rate, scp.jumped, 1.5));
  return { checks: scp ? rows.map((r) => r.met) : [rows[0]!.met, null], rows };
}

/** RSS of the agent once online and settled for `seconds` (no sessions yet), beside a bare `node` idling as long. */
async function idleRss(agentPid: number, seconds: number) {
  const bare = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1e9)'], { stdio: 'ignore' });
  try {
    await sleep(seconds * 1000);
    return { agent: processStats(agentPid).rss, node: processStats(bare.pid!).rss };
  } finally {
    await stopChild(bare);
  }
}

export async function transferBench(server: ServerProcess, bytes: number, repeats: number, settleSeconds: number): Promise<Result[]> {
  const root = memoryDir('tether-bench-root-');
  const local = memoryDir('tether-bench-local-');
  makeFile(join(root, 'big.bin'), bytes);
  makeFile(join(local, 'up.bin'), bytes);
  const agent = await startAgent(server, 'bench-files', root);
  const agentPid = agent.child.pid!;
  const env = { TETHER_SERVER: server.url, TETHER_TOKEN: server.token };
  const size = `${round(bytes / MiB, 0)} MiB`;
  const of = repeats > 1 ? `, median of ${repeats}` : '';
  // RSS growth per process, of the first copies on a fresh server and of the copies after.
  const growth = { cold: { server: 0, agent: 0 }, warm: { server: 0, agent: 0 } };
  let phase: keyof typeof growth = 'cold';
  /** One `tether cp`: MiB/s of the whole command and the server's CPU seconds per GiB; the copy is checked and removed after. */
  const copy = (from: string, to: string, landed: string) => async () => {
    const t = await watched([server.pid, agentPid], () => run(process.execPath, [TETHER, 'cp', '--no-progress', from, to], env));
    if (statSync(landed).size !== bytes) throw new Error(`${landed}: size mismatch`);
    rmSync(landed);
    growth[phase].server = Math.max(growth[phase].server, t.usage[0]!.growth);
    growth[phase].agent = Math.max(growth[phase].agent, t.usage[1]!.growth);
    return { rate: bytes / MiB / t.seconds, cpu: t.usage[0]!.cpuSeconds / (bytes / GiB) };
  };
  try {
    const idle = await idleRss(agentPid, settleSeconds);
    const copyDown = copy('bench-files:/big.bin', join(local, 'down.bin'), join(local, 'down.bin'));
    const copyUp = copy(join(local, 'up.bin'), 'bench-files:/up.bin', join(root, 'up.bin'));
    // The first copy each way on a fresh server and agent runs code V8 has not compiled yet and
    // grows their heaps: reported on its own, and kept out of the medians the targets compare.
    const cold = { down: await copyDown(), up: await copyUp() };
    phase = 'warm';
    const down = await repeated(repeats, copyDown);
    const up = await repeated(repeats, copyUp);
    const bare = await repeated(repeats, () => bareRelay(bytes));
    const hop = await repeated(repeats, () => singleHop(bytes));
    const splice = await repeated(repeats, () => relaySplice(server, bytes));
    const scp = await scpRates(root, local, bytes, repeats);

    const from = cpTargets('from', down.rate.value, bare.rate.value, scp && { direct: scp.direct.down.value, jumped: scp.jumped.down.value });
    const to = cpTargets('to', up.rate.value, bare.rate.value, scp && { direct: scp.direct.up.value, jumped: scp.jumped.up.value });
    const cpTarget = '>= 1.0x scp, 1.5x scp -J, 0.8x bare relay';
    const relayCpu = `<= bare relay's ${round(bare.cpu.value, 2)}`;
    // Compared as shown: CPU time comes in 10 ms ticks, and float noise must not split a tie.
    const cpuMet = (m: Repeated) => round(m.value, 2) <= round(bare.cpu.value, 2);
    return [
      figure(`tether cp ${size} from the device${of}`, down.rate, 0, 'MiB/s', cpTarget, allMet(from.checks)),
      figure(`tether cp ${size} to the device${of}`, up.rate, 0, 'MiB/s', cpTarget, allMet(to.checks)),
      {
        section: 'transfer',
        name: `first tether cp ${size} from the device on a fresh server`,
        value: round(cold.down.rate, 0),
        unit: 'MiB/s',
        target: 'reported',
        met: null,
      },
      {
        section: 'transfer',
        name: `first tether cp ${size} to the device on a fresh server`,
        value: round(cold.up.rate, 0),
        unit: 'MiB/s',
        target: 'reported',
        met: null,
      },
      figure(`bare WebSocket relay, three processes (the limit)${of}`, bare.rate, 0, 'MiB/s', 'reported', null),
      figure(`bare WebSocket single hop, two processes${of}`, hop.rate, 0, 'MiB/s', 'reported', null),
      figure(`broker splice alone${of}`, splice.rate, 0, 'MiB/s', 'reported', null),
      ...scpRows(size, of, scp),
      ratio('splice / bare relay', splice.rate.value, bare.rate.value, 0.5),
      ratio('bare relay / bare single hop', bare.rate.value, hop.rate.value),
      ...from.rows,
      ...to.rows,
      figure(`server CPU per GiB, tether cp from the device${of}`, down.cpu, 2, 'CPU s/GiB', relayCpu, cpuMet(down.cpu)),
      figure(`server CPU per GiB, tether cp to the device${of}`, up.cpu, 2, 'CPU s/GiB', relayCpu, cpuMet(up.cpu)),
      figure(`bare relay process CPU per GiB${of}`, bare.cpu, 2, 'CPU s/GiB', 'reported', null),
      ...memoryRows(size, growth, idle),
    ];
  } finally {
    await agent.stop();
    rmSync(root, { recursive: true, force: true });
    rmSync(local, { recursive: true, force: true });
  }
}

function scpRows(size: string, of: string, scp: Awaited<ReturnType<typeof scpRates>>): Result[] {
  if (!scp) return [{ section: 'transfer', name: 'scp and scp -J (no sshd installed)', value: 'skipped', unit: '-', target: '-', met: null }];
  return [
    figure(`scp ${size} from sshd${of}`, scp.direct.down, 0, 'MiB/s', 'reported', null),
    figure(`scp ${size} to sshd${of}`, scp.direct.up, 0, 'MiB/s', 'reported', null),
    figure(`scp -J ${size} from sshd via jump host${of}`, scp.jumped.down, 0, 'MiB/s', 'reported', null),
    figure(`scp -J ${size} to sshd via jump host${of}`, scp.jumped.up, 0, 'MiB/s', 'reported', null),
  ];
}

/**
 * The first copy on a fresh server grows its RSS once by the most read buffers that ever waited
 * for the garbage collector at the same time (the allocator keeps that memory for the next
 * ones); later copies reuse it. The target is about a copy's own memory, so it compares the
 * copies after the first, and the first is shown beside them.
 */
function memoryRows(size: string, growth: Record<'cold' | 'warm', { server: number; agent: number }>, idle: { agent: number; node: number }): Result[] {
  const mib = (n: number) => round(n / MiB, 1);
  const idleRatio = idle.agent / idle.node;
  return [
    {
      section: 'memory',
      name: `server RSS growth during ${size} (peak of the copies after the first)`,
      value: mib(growth.warm.server),
      unit: 'MiB',
      target: '<= 32',
      met: growth.warm.server <= 32 * MiB,
    },
    {
      section: 'memory',
      name: `server RSS growth during the first copies on a fresh server`,
      value: mib(growth.cold.server),
      unit: 'MiB',
      target: 'reported',
      met: null,
    },
    {
      section: 'memory',
      name: `agent RSS growth during ${size} (peak of all copies)`,
      value: mib(Math.max(growth.cold.agent, growth.warm.agent)),
      unit: 'MiB',
      target: '<= 64',
      met: Math.max(growth.cold.agent, growth.warm.agent) <= 64 * MiB,
    },
    {
      section: 'memory',
      name: 'agent idle RSS (online, no sessions)',
      value: mib(idle.agent),
      unit: 'MiB',
      target: '<= 1.15x bare node',
      met: idleRatio <= 1.15,
    },
    { section: 'memory', name: 'bare node idle RSS', value: mib(idle.node), unit: 'MiB', target: 'reported', met: null },
    { section: 'memory', name: 'agent idle RSS / bare node', value: round(idleRatio, 2), unit: 'ratio', target: '<= 1.15', met: idleRatio <= 1.15 },
  ];
}

/**
 * scp both ways through a private sshd on a high loopback port, directly and through itself as a
 * jump host (`scp -J`), if sshd is installed.
 */
async function scpRates(root: string, local: string, bytes: number, repeats: number) {
  const sshd = await startSshd();
  if (!sshd) return undefined;
  const scp = (from: string, to: string, landed: string) => async () => {
    const t0 = performance.now();
    await run('scp', [...sshd.options, '-q', from, to]);
    const rate = bytes / MiB / ((performance.now() - t0) / 1000);
    rmSync(landed);
    return { rate };
  };
  const bothWays = async (host: string) => ({
    down: (await repeated(repeats, scp(`${host}:${join(root, 'big.bin')}`, join(local, 'scp-down.bin'), join(local, 'scp-down.bin')))).rate,
    up: (await repeated(repeats, scp(join(local, 'up.bin'), `${host}:${join(root, 'scp-up.bin')}`, join(root, 'scp-up.bin')))).rate,
  });
  try {
    return { direct: await bothWays(DIRECT), jumped: await bothWays(JUMPED) };
  } finally {
    sshd.stop();
  }
}
