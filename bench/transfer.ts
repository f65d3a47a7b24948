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
import { call, memoryDir, processStats, round, run, startAgent, TETHER, type Result, type ServerProcess } from './lib';
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

async function brokerSplice(server: ServerProcess, bytes: number): Promise<number> {
  const created = await call(`${server.url}/v1/devices`, 'POST', server.token, { device_id: 'bench-splice' });
  const agent = helper(['stream-agent', server.url, 'bench-splice', created.body.data.agent_token, String(bytes)]);
  await agent.next();
  for (;;) {
    const s = await call(`${server.url}/v1/devices/bench-splice/agent-status`, 'GET', server.token);
    if (s.body.data.agent_status === 'online') break;
    await new Promise((r) => setTimeout(r, 20));
  }
  const session = await call(`${server.url}/v1/remote-access/sessions`, 'POST', server.token, {
    device_id: 'bench-splice',
    protocol: 'file-transfer',
  });
  const sink = helper(['sink', session.body.data.websocket_url, String(bytes)]);
  await sink.next(); // open
  const { seconds } = await sink.next();
  await Promise.all([sink.stop(), agent.stop()]);
  await call(`${server.url}/v1/remote-access/sessions/${session.body.data.session_id}`, 'DELETE', server.token);
  return bytes / MiB / seconds;
}

export async function transferBench(server: ServerProcess, bytes: number): Promise<Result[]> {
  const results: Result[] = [];
  const root = memoryDir('tether-bench-root-');
  const local = memoryDir('tether-bench-local-');
  makeFile(join(root, 'big.bin'), bytes);
  makeFile(join(local, 'up.bin'), bytes);
  const agent = await startAgent(server, 'bench-files', root);
  const env = { TETHER_SERVER: server.url, TETHER_TOKEN: server.token };
  const size = `${round(bytes / MiB, 0)} MiB`;
  try {
    const down = await timed(server, () => run(process.execPath, [TETHER, 'cp', '--no-progress', 'bench-files:/big.bin', join(local, 'down.bin')], env));
    if (statSync(join(local, 'down.bin')).size !== bytes) throw new Error('download size mismatch');
    const up = await timed(server, () => run(process.execPath, [TETHER, 'cp', '--no-progress', join(local, 'up.bin'), 'bench-files:/up.bin'], env));
    if (statSync(join(root, 'up.bin')).size !== bytes) throw new Error('upload size mismatch');
    const downRate = bytes / MiB / down.seconds;
    const upRate = bytes / MiB / up.seconds;
    const bare = await bareRelay(bytes);
    const splice = await brokerSplice(server, bytes);
    const scp = await scpRates(root, local, bytes);

    results.push(
      { section: 'transfer', name: `tether cp ${size} from the device`, value: round(downRate, 0), unit: 'MiB/s', target: '>= 400', met: downRate >= 400 },
      { section: 'transfer', name: `tether cp ${size} to the device`, value: round(upRate, 0), unit: 'MiB/s', target: '>= 400', met: upRate >= 400 },
      { section: 'transfer', name: 'bare WebSocket relay (the limit)', value: round(bare, 0), unit: 'MiB/s', target: 'reported', met: null },
      { section: 'transfer', name: 'broker splice alone', value: round(splice, 0), unit: 'MiB/s', target: 'reported', met: null },
      { section: 'transfer', name: 'splice / bare relay', value: round(splice / bare, 2), unit: 'ratio', target: '>= 0.5', met: splice / bare >= 0.5 },
      { section: 'transfer', name: 'tether cp from / bare relay', value: round(downRate / bare, 2), unit: 'ratio', target: 'reported', met: null },
    );
    if (scp) {
      results.push(
        { section: 'transfer', name: `scp ${size} from sshd`, value: round(scp.down, 0), unit: 'MiB/s', target: 'reported', met: null },
        { section: 'transfer', name: `scp ${size} to sshd`, value: round(scp.up, 0), unit: 'MiB/s', target: 'reported', met: null },
        { section: 'transfer', name: 'tether cp from / scp from', value: round(downRate / scp.down, 2), unit: 'ratio', target: '>= 1.0', met: downRate >= scp.down },
        { section: 'transfer', name: 'tether cp to / scp to', value: round(upRate / scp.up, 2), unit: 'ratio', target: '>= 1.0', met: upRate >= scp.up },
      );
    } else {
      results.push({ section: 'transfer', name: 'scp (no sshd installed)', value: 'skipped', unit: '-', target: '>= 1.0 x', met: null });
    }
    const growth = Math.max(down.growth, up.growth) / MiB;
    results.push({ section: 'memory', name: `server RSS growth during ${size}`, value: round(growth, 1), unit: 'MiB', target: '<= 64', met: growth <= 64 });
  } finally {
    await agent.stop();
    rmSync(root, { recursive: true, force: true });
    rmSync(local, { recursive: true, force: true });
  }
  return results;
}

/** scp both ways through a private sshd on a high loopback port, if sshd is installed. */
async function scpRates(root: string, local: string, bytes: number) {
  const sshd = await startSshd();
  if (!sshd) return undefined;
  try {
    const opts = [...sshd.clientOptions, '-q'];
    const t0 = performance.now();
    await run('scp', [...opts, `root@127.0.0.1:${join(root, 'big.bin')}`, join(local, 'scp-down.bin')]);
    const down = bytes / MiB / ((performance.now() - t0) / 1000);
    const t1 = performance.now();
    await run('scp', [...opts, join(local, 'up.bin'), `root@127.0.0.1:${join(root, 'scp-up.bin')}`]);
    const up = bytes / MiB / ((performance.now() - t1) / 1000);
    return { down, up };
  } finally {
    sshd.stop();
  }
}

