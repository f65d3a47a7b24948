/**
 * @module Shared pieces of the benchmarks: a real `tether server` process, agents, an HTTP
 * helper with keep-alive, percentiles, and the results table.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { ListMeta } from '../shared/api/common';
import type { AgentStatusView, DeviceCreated } from '../shared/api/devices';

export const TETHER = resolve(__dirname, 'tether.cjs');

export interface Result {
  section: string;
  name: string;
  value: number | string;
  unit: string;
  target: string;
  /** true, false, or null when there is no target or it could not be measured. */
  met: boolean | null;
  /** Every run's figure, when the value is the median of several. */
  runs?: number[];
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** The middle value (the upper middle of an even count). */
export function median(values: number[]): number {
  return percentile(
    [...values].sort((a, b) => a - b),
    50,
  );
}

export const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;

/** Every directory the benchmark made; all removed when the process exits, whatever happened. */
const madeDirs: string[] = [];
process.once('exit', () => {
  for (const dir of madeDirs) rmSync(dir, { recursive: true, force: true });
});

function madeDir(parent: string, prefix: string): string {
  const dir = mkdtempSync(join(parent, prefix));
  madeDirs.push(dir);
  return dir;
}

/** A fresh directory under the system temp dir, removed at exit. */
export function tempDir(prefix: string): string {
  return madeDir(tmpdir(), prefix);
}

/**
 * A directory in memory (tmpfs) when the machine has one, so transfers measure tether and not
 * the disk (fsync still runs; on tmpfs it costs nothing, as scp, which never syncs, gets too).
 * Removed at exit.
 */
export function memoryDir(prefix: string): string {
  return existsSync('/dev/shm') ? madeDir('/dev/shm', prefix) : tempDir(prefix);
}

/** Resident memory of a process in bytes, and its CPU time in seconds (Linux /proc). */
export function processStats(pid: number): { rss: number; cpuSeconds: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const rss = Number(/^VmRSS:\s+(\d+) kB/m.exec(status)![1]) * 1024;
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { rss, cpuSeconds: (Number(f[11]) + Number(f[12])) / 100 };
}

/** SIGTERM, then waits for the exit (at once if it already ended). */
export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
}

export interface ServerProcess {
  url: string;
  pid: number;
  dataDir: string;
  token: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

/** `nodeFlags`: options for node itself (V8's), before the script. */
export async function startServer(env: Record<string, string> = {}, nodeFlags: string[] = []): Promise<ServerProcess> {
  const dataDir = tempDir('tether-bench-data-');
  const child = spawn(process.execPath, [...nodeFlags, TETHER, 'server'], {
    env: { ...process.env, TETHER_LISTEN: '127.0.0.1:0', TETHER_DATA_DIR: dataDir, TETHER_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((done, fail) => {
    let out = '';
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /tether listening on (\S+)/.exec(out);
      if (m) done(m[1]!);
    });
    child.once('exit', (code) => fail(new Error(`server exited with ${code}`)));
  });
  return {
    url,
    pid: child.pid!,
    dataDir,
    token: readFileSync(join(dataDir, 'admin.token'), 'utf8').trim(),
    child,
    async stop() {
      await stopChild(child);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

const keepAlive = new Agent({ keepAlive: true, maxSockets: 64 });

/** The body of a successful answer: `{status, data}` (types from `shared/api/`). */
export interface Data<T> {
  status: number;
  data: T;
}

/** The body of a page of a list: `{status, data, meta}`. */
export interface Page<T> extends Data<T[]> {
  meta: ListMeta;
}

/**
 * One JSON request; resolves with status and parsed body. `B`: the body the caller expects
 * (`Data<…>`, `Page<…>`); it is not checked, so look at `status` before trusting it.
 */
export function call<B = unknown>(url: string, method: string, token: string, body?: unknown, agent: Agent = keepAlive) {
  return new Promise<{ status: number; body: B }>((done, fail) => {
    const req = request(url, { method, agent, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString();
        done({ status: res.statusCode!, body: (text ? JSON.parse(text) : undefined) as B });
      });
    });
    req.on('error', fail);
    req.end(body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body));
  });
}

export interface AgentProcess {
  child: ChildProcess;
  stop(): Promise<void>;
}

/** Registers a device and starts a real agent process for it; resolves once it is online. */
export async function startAgent(server: ServerProcess, deviceId: string, filesRoot: string): Promise<AgentProcess> {
  const created = await call<Data<DeviceCreated>>(`${server.url}/v1/devices`, 'POST', server.token, { device_id: deviceId });
  const stateDir = tempDir('tether-bench-state-');
  const child = spawn(process.execPath, [TETHER, 'agent', '--server', server.url, '--device-id', deviceId], {
    env: {
      ...process.env,
      TETHER_DEVICE_TOKEN: created.body.data.agent_token,
      TETHER_FILES_ROOT: filesRoot,
      TETHER_LOG_LEVEL: 'warn',
      TETHER_STATE_DIR: stateDir,
    },
    stdio: 'ignore',
  });
  const deadline = Date.now() + 10_000;
  for (;;) {
    const s = await call<Data<AgentStatusView>>(`${server.url}/v1/devices/${deviceId}/agent-status`, 'GET', server.token);
    if (s.body.data.agent_status === 'online') break;
    if (Date.now() > deadline) throw new Error(`agent ${deviceId} did not come online`);
    await new Promise((r) => setTimeout(r, 20));
  }
  return {
    child,
    async stop() {
      await stopChild(child);
      rmSync(stateDir, { recursive: true, force: true });
    },
  };
}

/** Runs a command to completion; rejects on a non-zero exit. */
export function run(command: string, args: string[], env: Record<string, string> = {}): Promise<void> {
  return new Promise((done, fail) => {
    const child = spawn(command, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr!.on('data', (c: Buffer) => (err += c.toString()));
    child.once('exit', (code) => (code === 0 ? done() : fail(new Error(`${command} ${args.join(' ')} exited ${code}: ${err.slice(-500)}`))));
  });
}

/** Wall time of one run of a command in milliseconds; throws on a non-zero exit. */
export function wallMs(command: string, args: string[]): number {
  const t0 = performance.now();
  const done = spawnSync(command, args, { stdio: 'ignore' });
  if (done.status !== 0) throw new Error(`${command} ${args.join(' ')} exited ${done.status}`);
  return performance.now() - t0;
}

/** A row for `a / b`: `>= min` as its target when given, `<= max` when given, else reported. */
export function ratioRow(section: string, name: string, a: number, b: number, bound?: { min?: number; max?: number }): Result {
  const r = a / b;
  const { min, max } = bound ?? {};
  const target = min !== undefined ? `>= ${min.toFixed(1)}` : max !== undefined ? `<= ${max.toFixed(1)}` : 'reported';
  const met = min !== undefined ? r >= min : max !== undefined ? round(r, 2) <= max : null;
  return { section, name, value: round(r, 2), unit: 'ratio', target, met };
}

export function printTable(results: Result[]): void {
  const rows = results.map((r) => [r.section, r.name, String(r.value), r.unit, r.target, r.met === null ? '-' : r.met ? 'yes' : 'MISS']);
  const header = ['section', 'benchmark', 'value', 'unit', 'target', 'met'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 2 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join('  ');
  console.log(line(header));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const r of rows) console.log(line(r));
}

/** Runs `fn` over `items`, at most `limit` at a time. */
export async function pooled<T, R>(items: T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<PromiseSettledResult<R>[]> {
  const results: PromiseSettledResult<R>[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        results[i] = await fn(items[i]!, i).then(
          (value) => ({ status: 'fulfilled', value }) as const,
          (reason: unknown) => ({ status: 'rejected', reason }) as const,
        );
      }
    }),
  );
  return results;
}
