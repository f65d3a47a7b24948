/**
 * The process guard in a real process: an exception thrown from a timer and a rejected promise
 * nobody handles are logged and counted, and the process goes on to finish its work.
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../../helpers/stack';

const DRIVER = `
import { createLogger } from ${JSON.stringify(resolve(__dirname, '../../../shared/log.ts'))};
import { guardProcess } from ${JSON.stringify(resolve(__dirname, '../../../cmd/process-guard.ts'))};
const counted = [];
const unguard = guardProcess(createLogger({ level: 'info' }), (kind) => counted.push(kind));
setTimeout(() => { throw new Error('boom from a timer'); }, 1);
setTimeout(() => { void Promise.reject(new Error('nobody waits for me')); }, 5);
setTimeout(() => {
  unguard();
  process.stdout.write(JSON.stringify({ alive: true, counted }) + '\\n');
}, 50);
`;

describe('process guard', () => {
  it('logs and counts what escapes, and the process lives on', async () => {
    const dir = tempDir();
    const entry = join(dir, 'driver.ts');
    writeFileSync(entry, DRIVER);
    const out = join(dir, 'driver.cjs');
    await build({ entryPoints: [entry], bundle: true, platform: 'node', format: 'cjs', outfile: out, logLevel: 'silent' });
    const run = spawnSync(process.execPath, [out], { encoding: 'utf8', timeout: 10_000 });
    expect(run.status).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({ alive: true, counted: ['exception', 'rejection'] });
    const lines = run.stderr
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines).toMatchObject([
      { level: 'error', msg: 'uncaught error', kind: 'exception', err: { message: 'boom from a timer', stack: expect.stringContaining('boom from a timer') } },
      { level: 'error', msg: 'uncaught error', kind: 'rejection', err: { message: 'nobody waits for me' } },
    ]);
  });
});
