/**
 * @module `npm run bench`: starts a real `tether server` process on 127.0.0.1 and measures it
 * from this process, printing each figure beside its target and writing bench/results.json.
 * Today: API throughput and latency for reading a session with keep-alive connections.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { WebSocket } from 'ws';
import { AGENT_CONNECT_PATH } from '../shared/protocol';
import { AGENT_SUBPROTOCOL } from '../shared/version';

interface Result {
  name: string;
  value: number;
  unit: string;
  target: string;
  met: boolean;
}

const DURATION_MS = Number(process.env.BENCH_DURATION_MS ?? 5000);
const CONCURRENCY = 32;

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

async function startServer(dataDir: string) {
  const child = spawn(process.execPath, [resolve('dist/tether.cjs'), 'server'], {
    env: { ...process.env, TETHER_LISTEN: '127.0.0.1:0', TETHER_DATA_DIR: dataDir, TETHER_LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((done, fail) => {
    let out = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /tether listening on (\S+)/.exec(out);
      if (m) done(m[1]!);
    });
    child.once('exit', (code) => fail(new Error(`server exited with ${code}`)));
  });
  return { child, url };
}

async function call(agent: Agent, url: string, method: string, token: string, body?: unknown) {
  return new Promise<{ status: number; body: any }>((done, fail) => {
    const req = request(url, { method, agent, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => done({ status: res.statusCode!, body: JSON.parse(Buffer.concat(chunks).toString() || 'null') }));
    });
    req.on('error', fail);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

/** Keeps CONCURRENCY requests in flight on keep-alive connections for DURATION_MS. */
async function load(url: string, token: string) {
  const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  const latencies: number[] = [];
  let errors = 0;
  const end = performance.now() + DURATION_MS;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < end) {
        const t0 = performance.now();
        const res = await call(agent, url, 'GET', token);
        latencies.push(performance.now() - t0);
        if (res.status !== 200) errors++;
      }
    }),
  );
  agent.destroy();
  latencies.sort((a, b) => a - b);
  return { rps: latencies.length / (DURATION_MS / 1000), p50: percentile(latencies, 50), p99: percentile(latencies, 99), errors };
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'tether-bench-'));
  const server = await startServer(dataDir);
  const results: Result[] = [];
  try {
    const token = readFileSync(join(dataDir, 'admin.token'), 'utf8').trim();
    const setup = new Agent({ keepAlive: true });
    const device = await call(setup, `${server.url}/v1/devices`, 'POST', token, { device_id: 'bench-1' });
    const ws = new WebSocket(`${server.url.replace('http', 'ws')}${AGENT_CONNECT_PATH}`, AGENT_SUBPROTOCOL, {
      headers: { authorization: `Bearer ${device.body.data.agent_token}`, 'x-tether-device-id': 'bench-1' },
    });
    await new Promise((done) => ws.once('open', done));
    const session = await call(setup, `${server.url}/v1/remote-access/sessions`, 'POST', token, {
      device_id: 'bench-1',
      protocol: 'diagnostics',
    });
    setup.destroy();
    const r = await load(`${server.url}/v1/remote-access/sessions/${session.body.data.session_id}`, token);
    results.push(
      { name: 'GET session: requests/s', value: Math.round(r.rps), unit: 'req/s', target: '>= 5000', met: r.rps >= 5000 },
      { name: 'GET session: p99 latency', value: Number(r.p99.toFixed(2)), unit: 'ms', target: 'reported', met: true },
      { name: 'GET session: errors', value: r.errors, unit: 'requests', target: '0', met: r.errors === 0 },
    );
    ws.close();
  } finally {
    server.child.kill('SIGTERM');
    await new Promise((done) => server.child.once('exit', done));
    rmSync(dataDir, { recursive: true, force: true });
  }

  const width = Math.max(...results.map((r) => r.name.length));
  console.log(`${'benchmark'.padEnd(width)}  ${'value'.padStart(10)}  unit       target     met`);
  for (const r of results) {
    console.log(`${r.name.padEnd(width)}  ${String(r.value).padStart(10)}  ${r.unit.padEnd(9)}  ${r.target.padEnd(9)}  ${r.met ? 'yes' : 'MISS'}`);
  }
  writeFileSync('bench/results.json', `${JSON.stringify({ at: new Date().toISOString(), results }, null, 2)}\n`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
