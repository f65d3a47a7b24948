/**
 * @module Section `recording` (issue 16): what recording shell sessions costs. Two servers in the
 * same run, one recording (the default) and one with `TETHER_RECORD_SHELL=0`, each with a real
 * agent: keystroke echo p50/p99 through each, in turns after a round each not counted, so the
 * difference can be set beside the run's own noise (the spread between rounds of the same
 * server); and a
 * shell printing a file of several MiB through each, for throughput and the server's CPU per MiB.
 */
import { writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { WebSocket } from 'ws';
import { shellRoundTrips } from './echo';
import type { Session } from '../shared/api/sessions';
import { call, median, percentile, processStats, round, startAgent, startServer, tempDir, type Data, type Result, type ServerProcess } from './lib';

const MiB = 1024 * 1024;
/** Measured rounds per server, in turns (on, off, then off, on, …). */
const ROUNDS = 3;
const us = (ms: number) => round(ms * 1000, 0);

/** Prints `bytes` of base64 text through a new shell session: MiB/s at the client and the server's CPU s per MiB. */
async function shellThroughput(server: ServerProcess, deviceId: string, file: string) {
  const s = await call<Data<Session>>(`${server.url}/v1/remote-access/sessions`, 'POST', server.token, { device_id: deviceId, protocol: 'shell' });
  const ws = new WebSocket(s.body.data.websocket_url!, { perMessageDeflate: false });
  await new Promise((resolve) => ws.once('open', resolve));
  let text = '';
  let received = 0;
  let done: () => void;
  const finished = new Promise<void>((resolve) => (done = resolve));
  ws.on('message', (d: Buffer, isBinary) => {
    if (!isBinary) return;
    received += d.length;
    text = (text + d.toString('latin1')).slice(-64);
    if (text.includes('cat-done-42')) done(); // the result, not the command's own echo
  });
  // The command echoes first; its output counts from the moment it is sent.
  const cpu0 = processStats(server.pid).cpuSeconds;
  const t0 = performance.now();
  ws.send(Buffer.from(`cat ${file}; echo cat-done-$((6*7))\n`));
  await finished;
  const seconds = (performance.now() - t0) / 1000;
  const cpu = processStats(server.pid).cpuSeconds - cpu0;
  ws.close();
  await call(`${server.url}/v1/remote-access/sessions/${s.body.data.session_id}`, 'DELETE', server.token);
  return { rate: received / MiB / seconds, cpuPerMiB: cpu / (received / MiB), received };
}

export async function recordingBench(recording: ServerProcess, samples: number, bytes: number): Promise<Result[]> {
  const plain = await startServer({ TETHER_RECORD_SHELL: '0' });
  const root = tempDir('tether-bench-rec-');
  const file = join(root, 'output.txt');
  writeFileSync(file, randomBytes(Math.ceil((bytes * 3) / 4)).toString('base64')); // text, and it does not compress to nothing
  const agents = [await startAgent(recording, 'bench-rec-on', root), await startAgent(plain, 'bench-rec-off', root)];
  try {
    const rounds = { on: [] as Array<{ p50: number; p99: number }>, off: [] as Array<{ p50: number; p99: number }> };
    const servers = [
      ['on', recording, 'bench-rec-on'],
      ['off', plain, 'bench-rec-off'],
    ] as const;
    // A round each first, not counted: the first shell of a fresh agent and server runs cold code.
    for (const [, server, device] of servers) await shellRoundTrips(server, device, Math.min(samples, 2000));
    for (let i = 0; i < ROUNDS; i++) {
      for (const [key, server, device] of i % 2 === 0 ? servers : [...servers].reverse()) {
        const { warm } = await shellRoundTrips(server, device, samples);
        rounds[key].push({ p50: percentile(warm, 50), p99: percentile(warm, 99) });
      }
    }
    const p50 = { on: median(rounds.on.map((r) => r.p50)), off: median(rounds.off.map((r) => r.p50)) };
    const p99 = { on: median(rounds.on.map((r) => r.p99)), off: median(rounds.off.map((r) => r.p99)) };
    // The run's noise: how far the rounds of the same server are apart.
    const spread = (values: number[]) => Math.max(...values) - Math.min(...values);
    const noise = Math.max(spread(rounds.on.map((r) => r.p50)), spread(rounds.off.map((r) => r.p50)));
    const within = Math.abs(p50.on - p50.off) <= noise;
    const throughput = { on: await shellThroughput(recording, 'bench-rec-on', file), off: await shellThroughput(plain, 'bench-rec-off', file) };
    const size = `${round(throughput.on.received / MiB, 1)} MiB`;
    return [
      {
        section: 'recording',
        name: `keystroke echo p50, recording on (${samples} samples, median of ${ROUNDS} rounds)`,
        value: us(p50.on),
        unit: 'µs',
        target: 'reported',
        met: null,
        runs: rounds.on.map((r) => us(r.p50)),
      },
      {
        section: 'recording',
        name: 'keystroke echo p50, recording off',
        value: us(p50.off),
        unit: 'µs',
        target: 'reported',
        met: null,
        runs: rounds.off.map((r) => us(r.p50)),
      },
      {
        section: 'recording',
        name: 'keystroke echo p50 difference, on - off',
        value: us(p50.on - p50.off),
        unit: 'µs',
        target: `within the run's noise (${us(noise)} µs)`,
        met: within,
      },
      {
        section: 'recording',
        name: 'keystroke echo p99, recording on',
        value: us(p99.on),
        unit: 'µs',
        target: 'reported',
        met: null,
        runs: rounds.on.map((r) => us(r.p99)),
      },
      {
        section: 'recording',
        name: 'keystroke echo p99, recording off',
        value: us(p99.off),
        unit: 'µs',
        target: 'reported',
        met: null,
        runs: rounds.off.map((r) => us(r.p99)),
      },
      {
        section: 'recording',
        name: `shell output throughput (cat of ${size}), recording on`,
        value: round(throughput.on.rate, 1),
        unit: 'MiB/s',
        target: 'reported',
        met: null,
      },
      {
        section: 'recording',
        name: 'shell output throughput, recording off',
        value: round(throughput.off.rate, 1),
        unit: 'MiB/s',
        target: 'reported',
        met: null,
      },
      {
        section: 'recording',
        name: 'server CPU per MiB of shell output, recording on',
        value: round(throughput.on.cpuPerMiB * 1000, 1),
        unit: 'CPU ms/MiB',
        target: 'reported',
        met: null,
      },
      {
        section: 'recording',
        name: 'server CPU per MiB of shell output, recording off',
        value: round(throughput.off.cpuPerMiB * 1000, 1),
        unit: 'CPU ms/MiB',
        target: 'reported',
        met: null,
      },
    ];
  } finally {
    for (const a of agents) await a.stop();
    await plain.stop();
  }
}
