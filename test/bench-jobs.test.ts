/**
 * A tiny run of `npm run bench -- --only=jobs` (50 light agents, a paced job over 6) so the jobs
 * benchmark cannot rot: the light agents speak the job protocol to a real server and its
 * dispatcher, both jobs complete with every execution succeeded, and every figure is real.
 * Targets are not checked here: speed is the benchmark's business, never a test's.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { runBundle } from './helpers/processes';
import { tempDir } from './helpers/stack';

it('the quick jobs benchmark completes both jobs over light agents', async () => {
  const out = join(tempDir('tether-bench-jobs-'), 'results.json');
  const { code, output } = await runBundle('bench.cjs', ['--quick', '--only=jobs', `--out=${out}`]);
  expect(code, output).toBe(0);
  const report = JSON.parse(readFileSync(out, 'utf8')) as { results: Array<{ section: string; name: string; value: number | string }> };
  const jobs = report.results.filter((r) => r.section === 'jobs');
  const find = (name: string) => jobs.find((r) => r.name.startsWith(name))?.value;
  expect(find('diagnostics job over 50 agents')).toBe('completed, 50');
  expect(find('paced job (6 devices at 120/min)')).toBe('completed, 6');
  expect(find('executions per second')).toBeGreaterThan(0);
  // 6 starts at 120 a minute: five gaps of about half a second, never all at once.
  expect(find('paced job: shortest gap between starts')).toBeGreaterThan(0.2);
  expect(find('paced job: starts per minute')).toBeLessThan(200);
  for (const r of jobs) {
    if (typeof r.value === 'number') expect(Number.isFinite(r.value), r.name).toBe(true);
  }
  expect(output).toMatch(/section\s+benchmark\s+value\s+unit\s+target\s+met/);
}, 120_000);
