/**
 * @module The agent as one file (issue 32, `--only=agent-package`): the size of
 * dist/tether-agent-linux-x64 and of the .deb, the time from start to connected, and idle RSS of
 * bare `node`, `node dist/tether-agent.js` and the executable, side by side (target: the
 * executable no more than bare node). Skips with one line when `npm run package` has not run.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import type { AgentStatusView, DeviceCreated } from '../shared/api/devices';
import { call, median, processStats, round, startServer, stopChild, tempDir, type Data, type Result, type ServerProcess } from './lib';

const EXE = resolve(__dirname, 'tether-agent-linux-x64');
const BUNDLE = resolve(__dirname, 'tether-agent.js');
const MiB = 1024 * 1024;

/**
 * `rounds`: starts of each agent for the time to connected; `settleSeconds`: when idle RSS is
 * read, in seconds online (V8's memory reducer first runs about 8 s after start).
 */
const PLANS = { quick: { rounds: 2, settleSeconds: [1] }, full: { rounds: 15, settleSeconds: [5, 30, 60] } };

/** Starts one agent (`command args`) for a new device; resolves with its process and ms until it is online. */
async function startTimed(server: ServerProcess, deviceId: string, command: string, args: string[]): Promise<{ child: ChildProcess; ms: number }> {
  const created = await call<Data<DeviceCreated>>(`${server.url}/v1/devices`, 'POST', server.token, { device_id: deviceId });
  const home = tempDir('tether-bench-pkg-');
  const t0 = performance.now();
  // No node on the PATH, as on a device that has none: the executable must not need it.
  const child = spawn(command, [...args, '--server', server.url, '--device-id', deviceId], {
    env: {
      PATH: '/usr/sbin:/sbin',
      HOME: home,
      TETHER_DEVICE_TOKEN: created.body.data.agent_token,
      TETHER_STATE_DIR: home,
      TETHER_LOG_LEVEL: 'warn',
      TMPDIR: home,
    },
    stdio: 'ignore',
  });
  const deadline = Date.now() + 20_000;
  for (;;) {
    const s = await call<Data<AgentStatusView>>(`${server.url}/v1/devices/${deviceId}/agent-status`, 'GET', server.token);
    if (s.body.data.agent_status === 'online') return { child, ms: performance.now() - t0 };
    if (Date.now() > deadline || child.exitCode !== null) throw new Error(`agent ${deviceId} (${command}) did not come online`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/**
 * Drops the executable from the page cache, as on a device after boot. Just written by the build,
 * its pages sit in the cache as large folios, and the kernel maps a whole folio on a fault: the
 * same process then shows 10 MiB more RSS of file pages than one started from disk.
 */
function evictFromPageCache(file: string): void {
  spawnSync('sync', [file]);
  spawnSync('dd', [`if=${file}`, 'iflag=nocache', 'count=0'], { stdio: 'ignore' });
}

const mib = (bytes: number) => round(bytes / MiB, 1);

/** Anonymous resident memory (V8's heap, malloc, stacks): where the executable and bare node differ. */
function anonymousBytes(pid: number): number {
  return Number(/^Anonymous:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'))![1]) * 1024;
}

export async function agentPackageBench(quick: boolean): Promise<Result[]> {
  if (!existsSync(EXE)) {
    console.log('agent-package: dist/tether-agent-linux-x64 is missing (npm run package); skipped');
    return [];
  }
  const server = await startServer();
  try {
    return await measure(server, quick ? PLANS.quick : PLANS.full);
  } finally {
    await server.stop();
  }
}

async function measure(server: ServerProcess, plan: { rounds: number; settleSeconds: number[] }): Promise<Result[]> {
  const { version } = JSON.parse(readFileSync(resolve(__dirname, '..', 'package.json'), 'utf8')) as { version: string };
  const deb = resolve(__dirname, `tether-agent_${version}_amd64.deb`);
  const rows: Result[] = [{ section: 'agent-package', name: 'executable size', value: mib(statSync(EXE).size), unit: 'MiB', target: '-', met: null }];
  if (existsSync(deb)) rows.push({ section: 'agent-package', name: '.deb size', value: mib(statSync(deb).size), unit: 'MiB', target: '-', met: null });
  evictFromPageCache(EXE);

  const kinds = { bundle: [process.execPath, [BUNDLE]], exe: [EXE, []] } as const;
  const times: Record<keyof typeof kinds, number[]> = { bundle: [], exe: [] };
  for (let i = 0; i < plan.rounds; i++) {
    for (const kind of Object.keys(kinds) as Array<keyof typeof kinds>) {
      const [command, args] = kinds[kind];
      const { child, ms } = await startTimed(server, `pkg-${kind}-${i}`, command, [...args]);
      times[kind].push(ms);
      await stopChild(child);
    }
  }
  rows.push(
    {
      section: 'agent-package',
      name: 'start to connected: node tether-agent.js p50',
      value: round(median(times.bundle)),
      unit: 'ms',
      target: '-',
      met: null,
      runs: times.bundle,
    },
    {
      section: 'agent-package',
      name: 'start to connected: executable p50',
      value: round(median(times.exe)),
      unit: 'ms',
      target: '-',
      met: null,
      runs: times.exe,
    },
  );

  // The three side by side, read at the same moments.
  const bare = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1e9)'], { stdio: 'ignore' });
  const bundle = await startTimed(server, 'pkg-idle-bundle', process.execPath, [BUNDLE]);
  const exe = await startTimed(server, 'pkg-idle-exe', EXE, []);
  try {
    let waited = 0;
    for (const seconds of plan.settleSeconds) {
      await new Promise((r) => setTimeout(r, (seconds - waited) * 1000));
      waited = seconds;
      const [node, js, sea] = [bare.pid!, bundle.child.pid!, exe.child.pid!].map((pid) => processStats(pid).rss);
      const at = `idle RSS after ${seconds} s`;
      rows.push(
        { section: 'agent-package', name: `${at}: bare node`, value: mib(node!), unit: 'MiB', target: '-', met: null },
        { section: 'agent-package', name: `${at}: node tether-agent.js`, value: mib(js!), unit: 'MiB', target: '-', met: null },
        { section: 'agent-package', name: `${at}: executable`, value: mib(sea!), unit: 'MiB', target: '<= bare node', met: sea! <= node! },
      );
      // The binary's file pages are the same for both (BENCHMARKS.md): the gap is in these.
      const [nodeAnon, seaAnon] = [bare.pid!, exe.child.pid!].map(anonymousBytes);
      rows.push(
        { section: 'agent-package', name: `${at}: anonymous, bare node`, value: mib(nodeAnon!), unit: 'MiB', target: '-', met: null },
        { section: 'agent-package', name: `${at}: anonymous, executable`, value: mib(seaAnon!), unit: 'MiB', target: '-', met: null },
      );
    }
  } finally {
    await Promise.all([stopChild(bare), stopChild(bundle.child), stopChild(exe.child)]);
  }
  return rows;
}
