/**
 * The agent's job attempts with real commands: each attempt runs once whatever the relay repeats,
 * its result is kept and reported again after a reconnect until acknowledged, a cancel kills it,
 * and the number held is bounded.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadAgentConfig } from '../../../agent/config';
import { createJobTable, fitted, type JobTable } from '../../../agent/jobs/job-table';
import { runWork } from '../../../agent/jobs/run-work';
import { processExists } from '../../../agent/shell/process-session';
import { silentLogger } from '../../../shared/log';
import type { AgentToRelayMessage } from '../../../shared/protocol/control-channel';
import { MAX_JOB_RESULT_BYTES } from '../../../shared/protocol/jobs';
import { tempDir } from '../../helpers/temp';
import { waitFor } from '../../helpers/wait';

const filesRoot = tempDir('tether-jobs-table-');
const config = loadAgentConfig({ server: 'http://127.0.0.1:9', deviceId: 'dev-table', token: 'tok', filesRoot, stateDir: tempDir() }, {});
const tables: JobTable[] = [];
afterEach(async () => {
  await Promise.all(tables.splice(0).map((t) => t.stop()));
});

function table(maxHeld?: number) {
  const sent: AgentToRelayMessage[] = [];
  const t = createJobTable({
    log: silentLogger,
    send: (msg) => sent.push(msg),
    run: (work, ctx) => runWork(work, { ...ctx, config, blobUrl: () => 'http://127.0.0.1:9/' }),
    maxHeld,
  });
  tables.push(t);
  const results = () => sent.filter((m) => m.type === 'job.result');
  return { t, sent, results };
}
const run = (execution_id: string, argv: string[], attempt = 1) =>
  ({ type: 'job.run', execution_id, attempt, work: { kind: 'command', argv, timeout_seconds: 60 } }) as const;
const ref = (type: 'job.ack' | 'job.cancel', execution_id: string, attempt = 1) => ({ type, execution_id, attempt });
/** The pid a command wrote into `name` (polled: the file appears once it runs). */
const pidIn = (name: string) => waitFor(() => Number(readFileSync(join(filesRoot, name), 'utf8').trim()) || undefined, `the pid in ${name}`);
const lines = (name: string) => readFileSync(join(filesRoot, name), 'utf8').split('\n').filter(Boolean).length;

describe('job table', () => {
  it('runs an attempt once whatever the relay repeats, and sends its result again until acknowledged', async () => {
    const { t, results } = table();
    const job = run('exe_once', ['sh', '-c', 'echo ran >> once.log; sleep 0.3; echo done']);
    t.onMessage(job);
    t.onMessage(job); // while it runs
    await waitFor(() => results().length === 1, 'the result');
    expect(results()[0]).toEqual({ type: 'job.result', execution_id: 'exe_once', attempt: 1, status: 'succeeded', exit_code: 0, output_tail: 'done\n' });
    t.onMessage(job); // while its result waits: sent again, not run again
    expect(results()).toHaveLength(2);
    t.onMessage(ref('job.ack', 'exe_once'));
    expect(t.size).toBe(0);
    t.onMessage(job); // after the ack: remembered
    t.onMessage(run('exe_once', ['sh', '-c', 'echo ran >> once.log'], 2)); // another attempt is another run
    await waitFor(() => results().length === 3, 'the second attempt');
    expect(results()[2]).toMatchObject({ attempt: 2, status: 'succeeded' });
    expect(lines('once.log')).toBe(2);
  });

  it('after a reconnect reports what runs and what waits, then sends the waiting results', async () => {
    const { t, sent, results } = table();
    t.onMessage(run('exe_done', ['true']));
    t.onMessage(run('exe_slow', ['sleep', '30']));
    await waitFor(() => results().length === 1, 'the quick one');
    sent.length = 0;
    t.connected();
    expect(sent).toEqual([
      {
        type: 'jobs.running',
        running: [
          { execution_id: 'exe_done', attempt: 1 },
          { execution_id: 'exe_slow', attempt: 1 },
        ],
      },
      { type: 'job.result', execution_id: 'exe_done', attempt: 1, status: 'succeeded', exit_code: 0, output_tail: '' },
    ]);
    t.onMessage(ref('job.ack', 'exe_done'));
    t.onMessage(ref('job.ack', 'exe_slow')); // an ack of an attempt still running changes nothing
    sent.length = 0;
    t.connected();
    expect(sent).toEqual([{ type: 'jobs.running', running: [{ execution_id: 'exe_slow', attempt: 1 }] }]);
  });

  it('a cancel kills the running attempt and nothing is reported for it', async () => {
    const { t, sent } = table();
    t.onMessage(run('exe_cancel', ['sh', '-c', 'echo $$ > cancel.pid; exec sleep 60']));
    const pid = await pidIn('cancel.pid');
    t.onMessage(ref('job.cancel', 'exe_cancel'));
    await waitFor(() => !processExists(pid), 'the command to end', 5000);
    expect(t.size).toBe(0);
    sent.length = 0;
    t.connected();
    expect(sent).toEqual([{ type: 'jobs.running', running: [] }]);
    expect(sent.some((m) => m.type === 'job.result')).toBe(false);
  });

  it('holds at most its bound: one more attempt is answered agent_busy at once; stop() kills what runs', async () => {
    const { t, results } = table(2);
    t.onMessage(run('exe_a', ['sh', '-c', 'echo $$ > a.pid; exec sleep 60']));
    t.onMessage(run('exe_b', ['sleep', '60']));
    t.onMessage(run('exe_c', ['true']));
    expect(results()).toEqual([
      {
        type: 'job.result',
        execution_id: 'exe_c',
        attempt: 1,
        status: 'failed',
        error: { code: 'agent_busy', message: expect.stringContaining('2 job attempts') },
      },
    ]);
    const pid = await pidIn('a.pid');
    await t.stop();
    expect(processExists(pid)).toBe(false);
    expect(t.size).toBe(0);
    expect(results()).toHaveLength(1);
  });

  it('sends a result too big for a control frame as a failure result_too_large, with what is small of it', () => {
    const small = { type: 'job.result', execution_id: 'exe_s', attempt: 1, status: 'succeeded', result: { lines: ['a'] } } as const;
    expect(fitted(small)).toBe(small);
    const lines = Array.from({ length: 2000 }, (_, i) => `line ${i} ${'x'.repeat(40)}`);
    const big = fitted({ type: 'job.result', execution_id: 'exe_b', attempt: 2, status: 'succeeded', exit_code: null, result: { lines } });
    expect(big).toEqual({
      type: 'job.result',
      execution_id: 'exe_b',
      attempt: 2,
      status: 'failed',
      exit_code: null,
      error: { code: 'result_too_large', message: expect.stringContaining(`at most ${MAX_JOB_RESULT_BYTES} bytes`) },
    });
    expect(Buffer.byteLength(JSON.stringify(big))).toBeLessThan(MAX_JOB_RESULT_BYTES);
  });
});
