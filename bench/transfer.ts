/**
 * @module Section 1 and 5: `tether cp` of a large file from and to a device through the real
 * CLI, agent and broker; the same bytes through a bare WebSocket relay (the limit) and through
 * the broker's splice alone; OpenSSH `scp` to a private sshd when one is installed; and the
 * server's memory growth while the bytes stream through it.
 */
import { closeSync, openSync, rmSync, statSync, writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { helper } from './helpers';
import { call, median, memoryDir, processStats, round, run, startAgent, TETHER, type Result, type ServerProcess } from './lib';
import { startSshd } from './sshd';

const MiB = 1024 * 1024;

function makeFile(path: string, bytes: number): void {
  const block = randomBytes(MiB);
  const fd = openSync(path, 'w');
  for (let done = 0; done < bytes; done += MiB) writeSync(fd, block, 0, Math.min(MiB, bytes - done));
  closeSync(fd);
}

/** Runs `fn` while sampling the server's RSS; returns seconds taken and the peak growth. */
async function timed(server: ServerProcess, fn: () => Promise<void>) {
  const before = processStats(server.pid).rss;
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, processStats(server.pid).rss)), 25);
  const t0 = performance.now();
  await fn();
  const seconds = (performance.now() - t0) / 1000;
  clearInterval(sampler);
  return { seconds, growth: peak - before };
}

async function bareRelay(bytes: number): Promise<number> {
  const relay = helper(['relay']);
  const { port } = await relay.next();
  const url = `ws://127.0.0.1:${port}`;
  const sink = helper(['sink', url, String(bytes)]);
  await sink.next();
  const source = helper(['source', url, String(bytes)]);
  const { seconds } = await sink.next();
  await Promise.all([source.stop(), sink.stop(), relay.stop()]);
  return bytes / MiB / seconds;
}

let splices = 0;

async function brokerSplice(server: ServerProcess, bytes: number): Promise<number> {
  const deviceId = `bench-splice-${++splices}`;
  const created = await call(`${server.url}/v1/devices`, 'POST', server.token, { device_id: deviceId });
  const agent = helper(['stream-agent', server.url, deviceId, created.body.data.agent_token, String(bytes)]);
  await agent.next();
  for (;;) {
    const s = await call(`${server.url}/v1/devices/${deviceId}/agent-status`, 'GET', server.token);
    if (s.body.data.agent_status === 'online') break;
    await new Promise((r) => setTimeout(r, 20));
  }
  const session = await call(`${server.url}/v1/remote-access/sessions`, 'POST', server.token, {
    device_id: deviceId,
    protocol: 'file-transfer',
  });
  const sink = helper(['sink', session.body.data.websocket_url, String(bytes)]);
  await sink.next(); // open
  const { seconds } = await sink.next();
  await Promise.all([sink.stop(), agent.stop()]);
  await call(`${server.url}/v1/remote-access/sessions/${session.body.data.session_id}`, 'DELETE', server.token);
  return bytes / MiB / seconds;
}

/** Runs `measure` `times` times in a row; the median and every run's figure. */
async function repeated(times: number, measure: () => Promise<number>): Promise<{ value: number; runs: number[] }> {
  const runs: number[] = [];
  for (let i = 0; i < times; i++) runs.push(await measure());
  return { value: median(runs), runs: runs.map((r) => round(r, 0)) };
}

export async function transferBench(server: ServerProcess, bytes: number, repeats: number): Promise<Result[]> {
  const results: Result[] = [];
  const root = memoryDir('tether-bench-root-');
  const local = memoryDir('tether-bench-local-');
  makeFile(join(root, 'big.bin'), bytes);
  makeFile(join(local, 'up.bin'), bytes);
  const agent = await startAgent(server, 'bench-files', root);
  const env = { TETHER_SERVER: server.url, TETHER_TOKEN: server.token };
  const size = `${round(bytes / MiB, 0)} MiB`;
  const of = repeats > 1 ? `, median of ${repeats}` : '';
  let growth = 0;
  /** One `tether cp`: MiB/s of the whole command; the copy is checked and removed after. */
  const copy = (from: string, to: string, landed: string) => async () => {
    const t = await timed(server, () => run(process.execPath, [TETHER, 'cp', '--no-progress', from, to], env));
    if (statSync(landed).size !== bytes) throw new Error(`${landed}: size mismatch`);
    rmSync(landed);
    growth = Math.max(growth, t.growth);
    return bytes / MiB / t.seconds;
  };
  try {
    const down = await repeated(repeats, copy('bench-files:/big.bin', join(local, 'down.bin'), join(local, 'down.bin')));
    const up = await repeated(repeats, copy(join(local, 'up.bin'), 'bench-files:/up.bin', join(root, 'up.bin')));
    const bare = await repeated(repeats, () => bareRelay(bytes));
    const splice = await repeated(repeats, () => brokerSplice(server, bytes));
    const scp = await scpRates(root, local, bytes, repeats);

    results.push(
      { section: 'transfer', name: `tether cp ${size} from the device${of}`, value: round(down.value, 0), unit: 'MiB/s', target: '>= 400', met: down.value >= 400, runs: down.runs },
      { section: 'transfer', name: `tether cp ${size} to the device${of}`, value: round(up.value, 0), unit: 'MiB/s', target: '>= 400', met: up.value >= 400, runs: up.runs },
      { section: 'transfer', name: `bare WebSocket relay (the limit)${of}`, value: round(bare.value, 0), unit: 'MiB/s', target: 'reported', met: null, runs: bare.runs },
      { section: 'transfer', name: `broker splice alone${of}`, value: round(splice.value, 0), unit: 'MiB/s', target: 'reported', met: null, runs: splice.runs },
      { section: 'transfer', name: 'splice / bare relay', value: round(splice.value / bare.value, 2), unit: 'ratio', target: '>= 0.5', met: splice.value / bare.value >= 0.5 },
      { section: 'transfer', name: 'tether cp from / bare relay', value: round(down.value / bare.value, 2), unit: 'ratio', target: 'reported', met: null },
    );
    if (scp) {
      results.push(
        { section: 'transfer', name: `scp ${size} from sshd${of}`, value: round(scp.down.value, 0), unit: 'MiB/s', target: 'reported', met: null, runs: scp.down.runs },
        { section: 'transfer', name: `scp ${size} to sshd${of}`, value: round(scp.up.value, 0), unit: 'MiB/s', target: 'reported', met: null, runs: scp.up.runs },
        { section: 'transfer', name: 'tether cp from / scp from', value: round(down.value / scp.down.value, 2), unit: 'ratio', target: '>= 1.0', met: down.value >= scp.down.value },
        { section: 'transfer', name: 'tether cp to / scp to', value: round(up.value / scp.up.value, 2), unit: 'ratio', target: '>= 1.0', met: up.value >= scp.up.value },
      );
    } else {
      results.push({ section: 'transfer', name: 'scp (no sshd installed)', value: 'skipped', unit: '-', target: '>= 1.0 x', met: null });
    }
    const growthMiB = growth / MiB;
    results.push({ section: 'memory', name: `server RSS growth during ${size} (peak of all copies)`, value: round(growthMiB, 1), unit: 'MiB', target: '<= 64', met: growthMiB <= 64 });
  } finally {
    await agent.stop();
    rmSync(root, { recursive: true, force: true });
    rmSync(local, { recursive: true, force: true });
  }
  return results;
}

/** scp both ways through a private sshd on a high loopback port, if sshd is installed. */
async function scpRates(root: string, local: string, bytes: number, repeats: number) {
  const sshd = await startSshd();
  if (!sshd) return undefined;
  const opts = [...sshd.clientOptions, '-q'];
  const scp = (from: string, to: string, landed: string) => async () => {
    const t0 = performance.now();
    await run('scp', [...opts, from, to]);
    const rate = bytes / MiB / ((performance.now() - t0) / 1000);
    rmSync(landed);
    return rate;
  };
  try {
    const down = await repeated(repeats, scp(`root@127.0.0.1:${join(root, 'big.bin')}`, join(local, 'scp-down.bin'), join(local, 'scp-down.bin')));
    const up = await repeated(repeats, scp(join(local, 'up.bin'), `root@127.0.0.1:${join(root, 'scp-up.bin')}`, join(root, 'scp-up.bin')));
    return { down, up };
  } finally {
    sshd.stop();
  }
}
