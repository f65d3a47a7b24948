/**
 * A tiny run of `npm run bench` (a few MiB, a few samples) so the benchmark cannot rot: every
 * section runs against a real server and agents and yields real figures. Targets are not
 * checked here: speed is the benchmark's business, never a test's.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { runBundle } from './helpers/processes';
import { tempDir } from './helpers/stack';

it('the quick benchmark measures every section', async () => {
  const out = join(tempDir('tether-bench-smoke-'), 'results.json');
  const { code, output: stdout } = await runBundle('bench.cjs', ['--quick', `--out=${out}`]);
  expect(code, stdout).toBe(0);
  const report = JSON.parse(readFileSync(out, 'utf8'));
  expect(report.quick).toBe(true);
  const sections = new Set(report.results.map((r: { section: string }) => r.section));
  expect([...sections].sort()).toEqual([
    'agents',
    'api',
    'cluster',
    'console',
    'echo',
    'forward',
    'memory',
    'recording',
    'startup',
    'time to shell',
    'transfer',
  ]);
  for (const r of report.results) {
    if (r.value === 'skipped') continue;
    expect(typeof r.value, r.name).toBe('number');
    expect(Number.isFinite(r.value), r.name).toBe(true);
  }
  const find = (name: string) => report.results.find((r: { name: string }) => r.name.startsWith(name));
  expect(find('tether cp 8 MiB from the device').value).toBeGreaterThan(0);
  expect(find('agents connected to one server').value).toBe(50);
  expect(find('tether forward: 8 MiB up, one connection').value).toBeGreaterThan(0);
  expect(find('tether forward: 8 MiB down over 8 connections').value).toBeGreaterThan(0);
  expect(find('agents the API shows online').value).toBe(50);
  expect(find('agents online at once (control + 3 edges)').value).toBe(60);
  expect(find('online in the API after the failover').value).toBe(60);
  expect(find('nodes as started by default: cluster / single process').value).toBeGreaterThan(0);
  expect(find('both started with --min-semi-space-size=16: cluster / single process').value).toBeGreaterThan(0);
  expect(find('real agents on the edge that is killed').value).toBe(20);
  expect(stdout).toMatch(/section\s+benchmark\s+value\s+unit\s+target\s+met/);
}, 180_000);
