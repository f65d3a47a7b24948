/** The `command` job kind with real processes in a real files root: output tail, exit codes, timeout, cwd, environment. */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadAgentConfig } from '../../../agent/config';
import type { JobContext } from '../../../agent/jobs/outcome';
import { runWork } from '../../../agent/jobs/run-work';
import { OutputTail } from '../../../agent/jobs/output-tail';
import { processExists } from '../../../agent/shell/process-session';
import { silentLogger } from '../../../shared/log';
import { OUTPUT_TAIL_BYTES } from '../../../shared/protocol/jobs';
import { tempDir } from '../../helpers/temp';
import { waitFor } from '../../helpers/wait';

const filesRoot = tempDir('tether-jobs-cmd-');
const config = loadAgentConfig({ server: 'http://127.0.0.1:9', deviceId: 'dev-jobs', token: 'tok', filesRoot, stateDir: tempDir() }, {});
const ctx = (signal = new AbortController().signal): JobContext => ({ config, log: silentLogger, signal, blobUrl: () => 'http://127.0.0.1:9/' });
const command = (argv: string[], timeout_seconds = 30, signal?: AbortSignal) => runWork({ kind: 'command', argv, timeout_seconds }, ctx(signal));

describe('command jobs', () => {
  it('keeps only the last 4 KiB of a command that prints 100 KiB, stdout and stderr interleaved as they came', async () => {
    // 100 KiB of numbered lines on stdout, then a line on stderr and one more on stdout. Two pipes:
    // what the command writes to both at once may arrive in either order, so the lines are apart.
    const script = 'i=0; while [ $i -lt 2048 ]; do printf "line %045d\\n" $i; i=$((i+1)); done; sleep 0.3; echo to-stderr >&2; sleep 0.3; echo the-end';
    const outcome = await command(['sh', '-c', script]);
    expect(outcome).toMatchObject({ status: 'succeeded', exit_code: 0 });
    const tail = outcome.output_tail!;
    expect(Buffer.byteLength(tail)).toBe(OUTPUT_TAIL_BYTES);
    expect(tail.endsWith(`line ${'2047'.padStart(45, '0')}\nto-stderr\nthe-end\n`)).toBe(true);
    expect(tail).not.toContain(`line ${'0'.padStart(45, '0')}`);
  });

  it('runs in the files root with the environment of exec streams (no TETHER_* variables, no TERM), stdin closed', async () => {
    process.env.TETHER_JOB_SECRET = 'never-shown';
    try {
      const outcome = await command(['sh', '-c', 'pwd; env; cat; echo stdin-closed']);
      expect(outcome.status).toBe('succeeded');
      expect(outcome.output_tail!.split('\n')[0]).toBe(filesRoot);
      expect(outcome.output_tail).toContain('stdin-closed');
      expect(outcome.output_tail).not.toContain('TETHER_');
      expect(outcome.output_tail).not.toMatch(/^TERM=/m);
    } finally {
      delete process.env.TETHER_JOB_SECRET;
    }
  });

  it('fails with exit_nonzero and the exit code, 127 for a command not found and 126 for one that cannot run', async () => {
    expect(await command(['sh', '-c', 'echo oops >&2; exit 3'])).toMatchObject({
      status: 'failed',
      exit_code: 3,
      output_tail: 'oops\n',
      error: { code: 'exit_nonzero', message: 'exited with status 3' },
    });
    expect(await command(['no-such-command-for-jobs'])).toMatchObject({
      status: 'failed',
      exit_code: 127,
      error: { code: 'exit_nonzero', message: 'no-such-command-for-jobs: command not found' },
    });
    writeFileSync(join(filesRoot, 'not-executable'), 'echo hi\n', { mode: 0o644 });
    expect(await command(['./not-executable'])).toMatchObject({ status: 'failed', exit_code: 126, error: { code: 'exit_nonzero' } });
    expect(await command(['sh', '-c', 'kill -TERM $$'])).toMatchObject({
      status: 'failed',
      exit_code: null,
      error: { code: 'exit_nonzero', message: 'killed by SIGTERM' },
    });
  });

  it('kills the command and what it started after timeout_seconds: timed_out, with the output so far', async () => {
    const t0 = Date.now();
    const outcome = await command(['sh', '-c', 'sleep 60 & echo child=$!; echo started; wait'], 1);
    expect(Date.now() - t0).toBeLessThan(6000);
    expect(outcome).toMatchObject({ status: 'timed_out', exit_code: null, error: { code: 'timeout' } });
    expect(outcome.output_tail).toContain('started');
    const child = Number(/child=(\d+)/.exec(outcome.output_tail!)![1]);
    await waitFor(() => !processExists(child), 'the background sleep to end', 3000);
  });

  it('ends at once when its attempt is canceled', async () => {
    const controller = new AbortController();
    const running = command(['sleep', '60'], 3600, controller.signal);
    const t0 = Date.now();
    setImmediate(() => controller.abort());
    await running;
    expect(Date.now() - t0).toBeLessThan(5000);
  });
});

describe('OutputTail', () => {
  it('keeps the last bytes across wraps and never starts inside a character', () => {
    const tail = new OutputTail(8);
    tail.push(Buffer.from('abc'));
    expect(tail.text()).toBe('abc');
    tail.push(Buffer.from('defgh'));
    tail.push(Buffer.from('ij'));
    expect(tail.text()).toBe('cdefghij');
    tail.push(Buffer.from('0123456789'));
    expect(tail.text()).toBe('23456789');
    const utf = new OutputTail(6);
    utf.push(Buffer.from('xé€ab')); // x, é (2 bytes), € (3 bytes), a, b: the ring keeps the last byte of é
    expect(utf.bytes().length).toBe(6);
    expect(utf.text()).toBe('€ab');
  });
});
