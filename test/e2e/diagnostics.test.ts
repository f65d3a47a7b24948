/** The diagnostics protocol end to end: real data from this machine, read-only, confined logs. */
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, tempDir, type Stack } from '../helpers/stack';
import { connectStream, type StreamClient } from '../helpers/stream';

let stack: Stack;
let client: StreamClient;
let logDir: string;
let outside: string;

beforeAll(async () => {
  stack = await startStack();
  logDir = tempDir('tether-logs-');
  outside = tempDir('tether-outside-');
  writeFileSync(join(logDir, 'app.log'), Array.from({ length: 5000 }, (_, i) => `line ${i + 1}`).join('\n') + '\n');
  writeFileSync(join(outside, 'secret.log'), 'secret\n');
  symlinkSync(join(outside, 'secret.log'), join(logDir, 'sneaky.log'));
  symlinkSync('/dev/zero', join(logDir, 'zero.log'));
  mkdirSync(join(logDir, 'nested'));
  writeFileSync(join(logDir, 'nested', 'short.log'), 'only line'); // no final newline
  await stack.onlineDevice('diag-1', { TETHER_LOG_DIRS: logDir });
  const s = (await stack.admin.post('/v1/remote-access/sessions', { device_id: 'diag-1', protocol: 'diagnostics' })).body.data;
  client = connectStream(s.websocket_url);
  await client.opened;
});
afterAll(() => stack.stop());

describe('diagnostics', () => {
  it('system.info describes this machine', async () => {
    const r = await client.request('system.info');
    expect(r.ok).toBe(true);
    expect(r.result).toMatchObject({
      hostname: os.hostname(),
      arch: os.arch(),
      kernel: expect.stringContaining(os.release()),
      cpus: { count: os.cpus().length, model: expect.any(String) },
      agent_version: '0.1.0',
    });
    expect(r.result.uptime_s).toBeGreaterThan(0);
    expect(typeof r.result.os).toBe('string');
  });

  it('system.metrics gives load, CPU and memory', async () => {
    const { result } = await client.request('system.metrics');
    expect(result.loadavg).toHaveLength(3);
    expect(result.cpu_percent).toBeGreaterThanOrEqual(0);
    expect(result.cpu_percent).toBeLessThanOrEqual(100);
    expect(result.mem_total_bytes).toBeGreaterThan(0);
    expect(result.mem_used_bytes + result.mem_free_bytes).toBe(result.mem_total_bytes);
  });

  it('disk.usage lists the root filesystem like df', async () => {
    const { result } = await client.request('disk.usage');
    const root = result.mounts.find((m: { mount: string }) => m.mount === '/');
    expect(root).toBeDefined();
    expect(root.total_bytes).toBeGreaterThan(root.free_bytes);
    expect(root.used_bytes).toBeGreaterThan(0);
  });

  it('network.interfaces includes loopback with counters', async () => {
    const { result } = await client.request('network.interfaces');
    const lo = result.interfaces.find((i: { name: string }) => i.name === 'lo');
    expect(lo.addresses.some((a: { address: string }) => a.address === '127.0.0.1')).toBe(true);
    expect(lo.rx_bytes).toBeGreaterThan(0);
  });

  it('process.list finds the agent itself and honours the limit', async () => {
    const { result } = await client.request('process.list', { limit: 1000 });
    // the agent this test file started: a child of this process
    const agent = result.processes.find((p: { command: string; ppid: number }) => p.command.includes('tether.cjs agent') && p.ppid === process.pid);
    expect(agent).toMatchObject({ user: os.userInfo().username, pid: expect.any(Number) });
    expect(agent.rss).toBeGreaterThan(1024 * 1024);
    expect((await client.request('process.list', { limit: 3 })).result.processes).toHaveLength(3);
  });

  it('log.tail reads the last lines of a file in the log dirs', async () => {
    const r = await client.request('log.tail', { path: join(logDir, 'app.log'), lines: 3 });
    expect(r.result).toMatchObject({ lines: ['line 4998', 'line 4999', 'line 5000'], truncated: false });
    const all = await client.request('log.tail', { path: join(logDir, 'app.log'), lines: 10_000 });
    expect(all.result).toMatchObject({ lines: expect.any(Array), truncated: false });
    expect(all.result.lines).toHaveLength(5000);
    expect((await client.request('log.tail', { path: join(logDir, 'nested', 'short.log') })).result.lines).toEqual(['only line']);
  });

  it('log.tail refuses paths outside the log dirs, through .. or symlinks', async () => {
    for (const path of [
      join(outside, 'secret.log'),
      `${logDir}/../${outside.split('/').pop()}/secret.log`,
      join(logDir, 'sneaky.log'),
      join(logDir, 'zero.log'),
      '/etc/passwd',
    ]) {
      const r = await client.request('log.tail', { path });
      expect(r, path).toMatchObject({ ok: false, error: { code: 'path_outside_root' } });
    }
    expect((await client.request('log.tail', { path: join(logDir, 'missing.log') })).error.code).toBe('not_found');
  });

  it('unknown ops and bad params are errors, not crashes', async () => {
    expect((await client.request('system.reboot')).error).toEqual({ code: 'unknown_op', message: expect.stringContaining('system.info') });
    for (const [op, params] of [
      ['log.tail', { path: 'relative.log' }],
      ['log.tail', { path: join(logDir, 'app.log'), lines: 10_001 }],
      ['log.tail', {}],
      ['process.list', { limit: 'all' }],
      ['system.info', { verbose: true }],
    ] as const) {
      const r = await client.request(op, params);
      expect(r.error.code, `${op} ${JSON.stringify(params)}`).toBe('bad_params');
    }
    client.send('not json');
    await client.waitForMessage((m) => m.id === null && m.error?.code === 'bad_params');
    expect((await client.request('system.info')).ok).toBe(true); // still serving
  });
});
