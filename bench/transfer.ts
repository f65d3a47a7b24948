/**
 * @module Section 1 and 5: `tether cp` of a large file from and to a device through the real
 * CLI, agent and broker, interleaved round by round with the same bytes through one raw TCP relay
 * process between a source and a sink (three processes: the relay in Node, the limit of a relay
 * written in Node, and in C with splice(2), the physical limit); the broker's splice alone;
 * OpenSSH `scp` to a private sshd, directly and through a jump host, when one is installed; the
 * server's CPU per GiB beside the raw Node relay process's; memory: the server's and the agent's
 * RSS growth while the bytes stream through them, and the agent's idle RSS beside a bare `node`
 * idling; and a small `tether cp` as an installed `tether` starts it.
 */
import { spawn } from 'node:child_process';
import { closeSync, openSync, rmSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { memoryDir, processStats, round, run, startAgent, stopChild, TETHER, type Result, type ServerProcess } from './lib';
import { DIRECT, JUMPED, startSshd } from './sshd';
import { installedCopyBench } from './startup';
import { rawRelays, relaySplice } from './transfer-references';
import { allMet, cpTargets, figure, ratio, referenceRows, repeated } from './transfer-rows';

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
  const refs = await rawRelays();
  try {
    const idle = await idleRss(agentPid, settleSeconds);
    const copyDown = copy('bench-files:/big.bin', join(local, 'down.bin'), join(local, 'down.bin'));
    const copyUp = copy(join(local, 'up.bin'), 'bench-files:/up.bin', join(root, 'up.bin'));
    // The first copy each way on a fresh server and agent runs code V8 has not compiled yet and
    // grows their heaps: reported on its own, and kept out of the medians the targets compare.
    const cold = { down: await copyDown(), up: await copyUp() };
    phase = 'warm';
    // Interleaved: each tether copy is followed by the same bytes the same way through each raw
    // relay, round after round, so that a drifting machine moves tether and its references alike.
    const m = await repeated(repeats, async () => {
      const down = await copyDown();
      const nodeDown = await refs.copy('node', 'down', bytes);
      const spliceDown = refs.splice ? await refs.copy('splice', 'down', bytes) : { rate: NaN, cpu: NaN };
      const up = await copyUp();
      const nodeUp = await refs.copy('node', 'up', bytes);
      const spliceUp = refs.splice ? await refs.copy('splice', 'up', bytes) : { rate: NaN, cpu: NaN };
      return {
        down: down.rate,
        downCpu: down.cpu,
        up: up.rate,
        upCpu: up.cpu,
        nodeDown: nodeDown.rate,
        nodeDownCpu: nodeDown.cpu,
        nodeUp: nodeUp.rate,
        nodeUpCpu: nodeUp.cpu,
        spliceDown: spliceDown.rate,
        spliceDownCpu: spliceDown.cpu,
        spliceUp: spliceUp.rate,
        spliceUpCpu: spliceUp.cpu,
      };
    });
    await refs.stop();
    const splice = await repeated(repeats, () => relaySplice(server, bytes));
    const scp = await scpRates(root, local, bytes, repeats);
    writeFileSync(join(root, 'small.txt'), 'hi\n');
    const startup = await installedCopyBench(env, 'bench-files:/small.txt', local, repeats > 1 ? 10 : 2);

    const c = refs.splice;
    const from = cpTargets({
      way: 'from',
      arrow: '↓',
      rate: m.down.value,
      node: m.nodeDown.value,
      splice: c ? m.spliceDown.value : undefined,
      scp: scp && { direct: scp.direct.down.value, jumped: scp.jumped.down.value },
    });
    const to = cpTargets({
      way: 'to',
      arrow: '↑',
      rate: m.up.value,
      node: m.nodeUp.value,
      splice: c ? m.spliceUp.value : undefined,
      scp: scp && { direct: scp.direct.up.value, jumped: scp.jumped.up.value },
    });
    const cpTarget = '>= 0.8x raw Node relay, 1.0x scp, 1.5x scp -J';
    return [
      figure(`tether cp ${size} from the device${of}`, m.down, 0, 'MiB/s', cpTarget, allMet(from.checks)),
      figure(`tether cp ${size} to the device${of}`, m.up, 0, 'MiB/s', cpTarget, allMet(to.checks)),
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
      ...referenceRows(size, of, m, c),
      figure(`broker splice alone${of}`, splice.rate, 0, 'MiB/s', 'reported', null),
      ...scpRows(size, of, scp),
      ratio('broker splice alone / raw Node TCP relay ↓', splice.rate.value, m.nodeDown.value, { min: 0.5 }),
      ...from.rows,
      ...to.rows,
      figure(
        `server CPU per GiB, tether cp from the device${of}`,
        m.downCpu,
        2,
        'CPU s/GiB',
        `<= 2.0x raw Node relay's ${round(m.nodeDownCpu.value, 2)}`,
        m.downCpu.value <= 2 * m.nodeDownCpu.value,
      ),
      figure(
        `server CPU per GiB, tether cp to the device${of}`,
        m.upCpu,
        2,
        'CPU s/GiB',
        `<= 2.0x raw Node relay's ${round(m.nodeUpCpu.value, 2)}`,
        m.upCpu.value <= 2 * m.nodeUpCpu.value,
      ),
      ratio('server CPU per GiB from / raw Node relay process ↓', m.downCpu.value, m.nodeDownCpu.value, { max: 2.0 }),
      ratio('server CPU per GiB to / raw Node relay process ↑', m.upCpu.value, m.nodeUpCpu.value, { max: 2.0 }),
      ...memoryRows(size, growth, idle),
      ...startup,
    ];
  } finally {
    await refs.stop();
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
      name: 'agent idle RSS (node and its bundle, online, no sessions)',
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
