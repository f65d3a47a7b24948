/**
 * The short soak (`npm run soak -- --quick`): 10 real shells echoing and 2 transfers checked
 * byte for byte for 5 s against a real server and real agents, then every session closed and its
 * record checked against what its client counted. Zero errors, or the test fails.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { runBundle } from './helpers/processes';
import { tempDir } from './helpers/stack';

it('the quick soak runs clean: no errors, every counter right', async () => {
  const out = join(tempDir('tether-soak-smoke-'), 'soak.json');
  const { code, output } = await runBundle('soak.cjs', ['--quick', `--out=${out}`]);
  expect(code, output).toBe(0);
  const report = JSON.parse(readFileSync(out, 'utf8'));
  expect(report).toMatchObject({ quick: true, errors: 0, counters_wrong: 0, sessions_checked: 12 });
  expect(report.shell_echoes).toBeGreaterThan(10);
  expect(report.uploads).toBeGreaterThan(0);
  expect(report.downloads).toBe(report.uploads);
  expect(output).toMatch(/^errors\s+0$/m);
}, 120_000);
