/**
 * @module Section 2: keystroke echo, 1-byte round trips through `cat` in a shell session's PTY,
 * typed by tether's own WebSocket client as `tether shell` does, beside `ssh -tt` and `ssh -J
 * -tt` (through a jump host: the sshd reached through itself, as a device behind NAT is reached)
 * when a private sshd can run. The sessions are open at once and each method types BLOCK
 * keystrokes in turn, so that the machine's own hiccups fall on all of them alike.
 */
import { spawn } from 'node:child_process';
import { loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { call, percentile, round, startAgent, tempDir, type Result, type ServerProcess } from './lib';
import { openShell } from './latency';
import { DIRECT, JUMPED, startSshd, type Sshd } from './sshd';

const us = (ms: number) => round(ms * 1000, 0);

/** Keystrokes before the first measured one; and at least this long, for the warm figures. */
const WARMUP_SAMPLES = 500;
const WARMUP_MS = 3000;
/** The round trips right after the first WARMUP_SAMPLES, reported as a cold figure. */
const COLD_SAMPLES = 2000;

/** Sorted round trip times (ms) of a cold run and, after a longer warm-up, a warm one. */
export interface EchoTimes {
  cold: number[];
  warm: number[];
}

/** Keystrokes of one method before the next method's turn, when methods are interleaved. */
const BLOCK = 1000;

/** One terminal to type into. */
interface EchoChannel {
  /** Types `n` keystrokes one at a time (each once the last came back); their round trips (ms) are pushed onto `into`. */
  trips(n: number, into: number[]): Promise<void>;
  close(): Promise<void>;
}

/**
 * A channel over `send` and the bytes that come back through `onData`: write one byte, wait for
 * it to come back, write the next from the handler that saw it. No promise or closure per
 * keystroke: the measuring process's own collections delay whatever it measures, tether's
 * keystrokes and ssh's alike.
 */
function echoChannel(send: (b: Buffer) => void, onData: (l: (d: Buffer) => void) => void, close: () => Promise<void>): EchoChannel {
  const byte = Buffer.from('x');
  let t0 = 0;
  let left = 0;
  let times: number[] = [];
  let finished: (() => void) | undefined;
  onData((d) => {
    if (finished === undefined || !d.includes(0x78)) return;
    times.push(performance.now() - t0);
    if (--left === 0) {
      const finish = finished;
      finished = undefined;
      return finish();
    }
    t0 = performance.now();
    send(byte);
  });
  return {
    trips(n, into) {
      if (n <= 0) return Promise.resolve();
      return new Promise<void>((resolve) => {
        times = into;
        left = n;
        finished = resolve;
        t0 = performance.now();
        send(byte);
      });
    },
    close,
  };
}

const sorted = (times: number[]) => times.sort((a, b) => a - b);

/**
 * The first COLD_SAMPLES round trips after WARMUP_SAMPLES, then more until WARMUP_MS have passed
 * since the first keystroke. V8 compiles the hot path of each of the three processes in tiers
 * over the first seconds; ssh's C code has nothing to warm up. A long-lived agent and server are
 * warm, so the targets compare the warm figures, and the cold one is shown beside them.
 */
async function warmUp(channel: EchoChannel, samples: number): Promise<number[]> {
  const started = performance.now();
  const warmupSamples = Math.min(WARMUP_SAMPLES, samples);
  await channel.trips(warmupSamples, []);
  const cold: number[] = [];
  await channel.trips(Math.min(COLD_SAMPLES, samples), cold);
  const warmupMs = samples > warmupSamples ? WARMUP_MS : 0; // the quick run does not wait
  while (performance.now() - started < warmupMs) await channel.trips(100, []);
  return sorted(cold);
}

/**
 * `samples` warm round trips of each channel, BLOCK at a time in turn, so that whatever else
 * the machine does meanwhile (its tail is where that shows first) falls on every method alike.
 */
async function interleaved(channels: EchoChannel[], samples: number): Promise<number[][]> {
  const times = channels.map(() => [] as number[]);
  for (let done = 0; done < samples; done += BLOCK) {
    for (const [i, channel] of channels.entries()) await channel.trips(Math.min(BLOCK, samples - done), times[i]!);
  }
  return times.map(sorted);
}
/** `cat` in a new shell session on `deviceId`'s (running) agent, as an echo channel. */
async function tetherChannel(server: ServerProcess, deviceId: string): Promise<EchoChannel> {
  const { ws, sessionId } = await openShell(server, deviceId);
  ws.send(Buffer.from('stty raw -echo; exec cat\n'));
  await sleep(500); // let cat start and the echo of the line pass
  return echoChannel(
    (b) => ws.send(b),
    (l) => ws.on('binary', l),
    async () => {
      ws.close(1000, '');
      await call(`${server.url}/v1/remote-access/sessions/${sessionId}`, 'DELETE', server.token);
    },
  );
}

/** Round trips through `cat` in a new shell session on `deviceId`'s (running) agent. */
export async function shellRoundTrips(server: ServerProcess, deviceId: string, samples: number): Promise<EchoTimes> {
  const channel = await tetherChannel(server, deviceId);
  try {
    const cold = await warmUp(channel, samples);
    const [warm] = await interleaved([channel], samples);
    return { cold, warm: warm! };
  } finally {
    await channel.close();
  }
}

/**
 * Keystroke echo through `cat` in a tether shell session on a new real agent and, when a private
 * sshd can run, over `ssh -tt` directly and through a jump host, all three open at once and
 * measured in turn.
 */
export async function echoBench(server: ServerProcess, samples: number): Promise<Result[]> {
  const agent = await startAgent(server, 'bench-echo', tempDir('tether-bench-echo-'));
  const sshd = await startSshd();
  const channels: EchoChannel[] = [];
  try {
    const tether = await tetherChannel(server, 'bench-echo');
    channels.push(tether);
    if (sshd) channels.push(await sshChannel(sshd, DIRECT), await sshChannel(sshd, JUMPED));
    const cold = await warmUp(tether, samples);
    for (const ssh of channels.slice(1)) await warmUp(ssh, Math.min(samples, WARMUP_SAMPLES));
    const [warm, direct, jumped] = await interleaved(channels, samples);
    return echoRows(cold, warm!, direct && jumped ? { direct, jumped } : undefined);
  } finally {
    for (const channel of channels) await channel.close();
    sshd?.stop();
    await agent.stop();
  }
}

function echoRows(cold: number[], warm: number[], ssh: { direct: number[]; jumped: number[] } | undefined): Result[] {
  const p50 = percentile(warm, 50);
  const p99 = percentile(warm, 99);
  const jumped = ssh && { p50: percentile(ssh.jumped, 50), p99: percentile(ssh.jumped, 99) };
  const results: Result[] = [
    {
      section: 'echo',
      name: `keystroke echo p50 (${warm.length} samples, warm, interleaved with ssh's)`,
      value: us(p50),
      unit: 'µs',
      target: '<= ssh -J -tt p50',
      met: jumped ? p50 <= jumped.p50 : null,
    },
    { section: 'echo', name: 'keystroke echo p99 (warm)', value: us(p99), unit: 'µs', target: '<= ssh -J -tt p99', met: jumped ? p99 <= jumped.p99 : null },
    { section: 'echo', name: 'keystroke echo p99.9 (warm)', value: us(percentile(warm, 99.9)), unit: 'µs', target: 'reported', met: null },
    {
      section: 'echo',
      name: `keystroke echo p50, a new agent's first ${cold.length} after ${WARMUP_SAMPLES} (cold)`,
      value: us(percentile(cold, 50)),
      unit: 'µs',
      target: 'reported',
      met: null,
    },
    { section: 'echo', name: 'keystroke echo p99 (cold)', value: us(percentile(cold, 99)), unit: 'µs', target: 'reported', met: null },
    // The tail is where other work on the machine shows first (BENCHMARKS.md, issue 35): a p99 taken
    // with more runnable processes than cores measures the machine, not tether or ssh.
    { section: 'echo', name: 'load average (1 min) after the echo', value: round(loadavg()[0]!, 2), unit: '-', target: 'reported', met: null },
  ];
  if (!ssh) {
    results.push({ section: 'echo', name: 'ssh -tt and ssh -J -tt echo (no sshd installed)', value: 'skipped', unit: '-', target: '-', met: null });
    return results;
  }
  for (const [label, times] of [
    ['ssh -tt', ssh.direct],
    ['ssh -J -tt', ssh.jumped],
  ] as const) {
    results.push(
      { section: 'echo', name: `${label} echo p50`, value: us(percentile(times, 50)), unit: 'µs', target: 'reported', met: null },
      { section: 'echo', name: `${label} echo p99`, value: us(percentile(times, 99)), unit: 'µs', target: 'reported', met: null },
    );
  }
  results.push({
    section: 'echo',
    name: 'keystroke echo p99 / ssh -J -tt p99',
    value: round(p99 / jumped!.p99, 2),
    unit: 'ratio',
    target: '<= 1',
    met: p99 <= jumped!.p99,
  });
  return results;
}

/**
 * `cat` over `ssh -tt host`, as an echo channel. Round trips start once the remote end prints that
 * the terminal is raw: a byte sent sooner would sit in the cooked line buffer and come back twice,
 * and every later sample would then be answered by its predecessor's echo.
 */
async function sshChannel(sshd: Sshd, host: string): Promise<EchoChannel> {
  const child = spawn('ssh', ['-tt', ...sshd.options, host, 'stty raw -echo; printf ready; exec cat'], {
    stdio: ['pipe', 'pipe', 'ignore'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const close = async () => {
    child.kill('SIGTERM');
    await exited;
  };
  try {
    await new Promise<void>((resolve, reject) => {
      let seen = '';
      const onData = (d: Buffer) => {
        seen += d.toString();
        if (!seen.includes('ready')) return;
        child.stdout!.off('data', onData);
        resolve();
      };
      child.stdout!.on('data', onData);
      child.once('exit', (code) => reject(new Error(`ssh -tt ${host} exited ${code} before cat started`)));
    });
  } catch (err) {
    await close();
    throw err;
  }
  return echoChannel(
    (b) => child.stdin!.write(b),
    (l) => child.stdout!.on('data', l),
    close,
  );
}
