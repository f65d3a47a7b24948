/**
 * @module Sections 2 and 3: keystroke echo (1-byte round trips through `cat` in a shell
 * session's PTY) and time to shell (from `POST /v1/remote-access/sessions` to the first byte of
 * the prompt), beside `ssh -tt` and `ssh host true` when a private sshd can run.
 */
import { spawn, spawnSync } from 'node:child_process';
import { userInfo } from 'node:os';
import { WebSocket } from 'ws';
import { call, percentile, round, startAgent, tempDir, type Result, type ServerProcess } from './lib';
import { startSshd } from './sshd';

const us = (ms: number) => round(ms * 1000, 0);
const SESSION_GAP_MS = 500;

/** Measures `samples` round trips: write one byte, wait for it to come back. */
async function roundTrips(send: (b: Buffer) => void, onData: (l: (d: Buffer) => void) => void, samples: number, warmup: number) {
  let waiting: ((d: Buffer) => void) | undefined;
  onData((d) => waiting?.(d));
  const times: number[] = [];
  const byte = Buffer.from('x');
  for (let i = 0; i < samples + warmup; i++) {
    const t0 = performance.now();
    await new Promise<void>((resolve) => {
      waiting = (d) => {
        if (d.includes(0x78)) {
          waiting = undefined;
          resolve();
        }
      };
      send(byte);
    });
    if (i >= warmup) times.push(performance.now() - t0);
  }
  return times.sort((a, b) => a - b);
}

async function openShell(server: ServerProcess, deviceId: string, token = server.token) {
  const t0 = performance.now();
  const res = await call(`${server.url}/v1/remote-access/sessions`, 'POST', token, { device_id: deviceId, protocol: 'shell' });
  if (res.status !== 201) throw new Error(`open shell: ${res.status} ${JSON.stringify(res.body)}`);
  const ws = new WebSocket(res.body.data.websocket_url, { perMessageDeflate: false });
  const firstByte = await new Promise<number>((resolve) => ws.once('message', () => resolve(performance.now() - t0)));
  return { ws, sessionId: res.body.data.session_id as string, firstByte };
}

export async function echoBench(server: ServerProcess, samples: number): Promise<Result[]> {
  const agent = await startAgent(server, 'bench-echo', tempDir('tether-bench-echo-'));
  const results: Result[] = [];
  try {
    const { ws, sessionId } = await openShell(server, 'bench-echo');
    ws.send(Buffer.from('stty raw -echo; exec cat\n'), { binary: true });
    await new Promise((r) => setTimeout(r, 500)); // let cat start and the echo of the line pass
    const times = await roundTrips(
      (b) => ws.send(b, { binary: true }),
      (l) => ws.on('message', (d: Buffer, isBinary) => isBinary && l(d)),
      samples,
      Math.min(500, samples),
    );
    ws.close();
    await call(`${server.url}/v1/remote-access/sessions/${sessionId}`, 'DELETE', server.token);
    const p50 = percentile(times, 50);
    const p99 = percentile(times, 99);
    results.push(
      { section: 'echo', name: `keystroke echo p50 (${times.length} samples)`, value: us(p50), unit: 'µs', target: '<= 300', met: p50 <= 0.3 },
      { section: 'echo', name: 'keystroke echo p99', value: us(p99), unit: 'µs', target: '<= 1000', met: p99 <= 1 },
      { section: 'echo', name: 'keystroke echo p99.9', value: us(percentile(times, 99.9)), unit: 'µs', target: 'reported', met: null },
    );
    const ssh = await sshEcho(samples);
    if (ssh) {
      results.push(
        { section: 'echo', name: 'ssh -tt echo p50', value: us(ssh.p50), unit: 'µs', target: 'reported', met: null },
        { section: 'echo', name: 'ssh -tt echo p99', value: us(ssh.p99), unit: 'µs', target: 'reported', met: null },
      );
    } else {
      results.push({ section: 'echo', name: 'ssh -tt echo (no sshd installed)', value: 'skipped', unit: '-', target: '-', met: null });
    }
  } finally {
    await agent.stop();
  }
  return results;
}

async function sshEcho(samples: number) {
  const sshd = await startSshd();
  if (!sshd) return undefined;
  try {
    const child = spawn('ssh', ['-tt', ...sshd.sshOptions, `${userInfo().username}@127.0.0.1`, 'stty raw -echo; exec cat'], {
      stdio: ['pipe', 'pipe', 'ignore'],
    });
    await new Promise((r) => setTimeout(r, 1000));
    const times = await roundTrips(
      (b) => child.stdin!.write(b),
      (l) => child.stdout!.on('data', l),
      samples,
      Math.min(500, samples),
    );
    child.kill('SIGTERM');
    return { p50: percentile(times, 50), p99: percentile(times, 99) };
  } finally {
    sshd.stop();
  }
}

export async function timeToShellBench(server: ServerProcess, sessions: number): Promise<Result[]> {
  const agent = await startAgent(server, 'bench-tts', tempDir('tether-bench-tts-'));
  try {
    // 30 opens per minute per user (seed 8): spread the sessions over enough users.
    const users: string[] = [];
    for (let i = 0; i < Math.ceil(sessions / 25); i++) {
      await call(`${server.url}/v1/users`, 'POST', server.token, { username: `bench-pe-${i}`, role: 'platform-engineer' });
      users.push((await call(`${server.url}/v1/tokens`, 'POST', server.token, { username: `bench-pe-${i}` })).body.data.token);
    }
    const times: number[] = [];
    for (let i = 0; i < sessions; i++) {
      // Half a second apart, as people open shells; back to back, each session would wait for
      // the agent's next pre-started shell to finish its own start-up.
      await new Promise((r) => setTimeout(r, SESSION_GAP_MS));
      const token = users[i % users.length]!;
      const { ws, sessionId, firstByte } = await openShell(server, 'bench-tts', token);
      times.push(firstByte);
      ws.close();
      await call(`${server.url}/v1/remote-access/sessions/${sessionId}`, 'DELETE', token);
    }
    times.sort((a, b) => a - b);
    const p50 = percentile(times, 50);
    const results: Result[] = [
      { section: 'time to shell', name: `POST to first prompt byte p50 (${sessions} sessions)`, value: round(p50, 1), unit: 'ms', target: '<= 50', met: p50 <= 50 },
      { section: 'time to shell', name: 'POST to first prompt byte p99', value: round(percentile(times, 99), 1), unit: 'ms', target: 'reported', met: null },
    ];
    const sshd = await startSshd();
    if (sshd) {
      const sshTimes: number[] = [];
      for (let i = 0; i < Math.min(20, sessions); i++) {
        const t0 = performance.now();
        spawnSync('ssh', [...sshd.sshOptions, `${userInfo().username}@127.0.0.1`, 'true']);
        sshTimes.push(performance.now() - t0);
      }
      sshd.stop();
      sshTimes.sort((a, b) => a - b);
      results.push({ section: 'time to shell', name: 'ssh host true p50', value: round(percentile(sshTimes, 50), 1), unit: 'ms', target: 'reported', met: null });
    } else {
      results.push({ section: 'time to shell', name: 'ssh host true (no sshd installed)', value: 'skipped', unit: '-', target: '-', met: null });
    }
    return results;
  } finally {
    await agent.stop();
  }
}
