/**
 * The short soak (`npm run soak -- --quick`): 10 real shells echoing and 2 transfers checked
 * byte for byte for 5 s against a real server and real agents, then every session closed and its
 * record checked against what its client counted. Zero errors, or the test fails.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { expect, it } from 'vitest';
import { tempDir } from './helpers/stack';

it('the quick soak runs clean: no errors, every counter right', async () => {
  const out = join(tempDir('tether-soak-smoke-'), 'soak.json');
  const child = spawn(process.execPath, [resolve(__dirname, '../dist/soak.cjs'), '--quick', `--out=${out}`], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr.on('data', (c: Buffer) => (output += c.toString()));
  const code = await new Promise<number | null>((r) => child.once('exit', r));
  expect(code, output).toBe(0);
  const report = JSON.parse(readFileSync(out, 'utf8'));
  expect(report).toMatchObject({ quick: true, errors: 0, counters_wrong: 0, sessions_checked: 12 });
  expect(report.shell_echoes).toBeGreaterThan(10);
  expect(report.uploads).toBeGreaterThan(0);
  expect(report.downloads).toBe(report.uploads);
  expect(output).toMatch(/^errors\s+0$/m);
}, 120_000);
