/**
 * The dispatcher's pure rules: the abort rule's arithmetic, the output tail cut to its last bytes
 * at a character boundary, the work a stored spec describes, and an attempt's deadline.
 */
import { describe, expect, it } from 'vitest';
import { abortReason } from '../../../../api/jobs/runtime-settle';
import { attemptEnd, deadlineMs, tailBytes, workOf } from '../../../../api/jobs/runtime-work';
import type { JobSummary } from '../../../../api/store/job-runs-sweeps';
import { JOB_LIMITS } from '../../../../shared/api/jobs';

function summary(counts: Partial<JobSummary['counts']>, pct: number | null, min: number): JobSummary {
  return {
    job_id: 'job_x',
    kind: 'command',
    status: 'in_progress',
    created_by: 'admin',
    trace_id: 't',
    abort_failure_pct: pct,
    abort_min_executed: min,
    counts: { queued: 0, in_progress: 0, succeeded: 0, failed: 0, timed_out: 0, canceled: 0, ...counts },
  };
}

describe('the abort rule', () => {
  it('waits for abort_min_executed ended executions', () => {
    expect(abortReason(summary({ failed: 1, queued: 5 }, 50, 2))).toBeUndefined();
    expect(abortReason(summary({ failed: 2, queued: 5 }, 50, 2))).toBe('2 of 2 executions failed (100% ≥ 50%)');
  });

  it('counts timed_out as failed and ignores canceled and running ones', () => {
    expect(abortReason(summary({ failed: 1, timed_out: 2, succeeded: 3, canceled: 9, in_progress: 4 }, 50, 2))).toBe('3 of 6 executions failed (50% ≥ 50%)');
    expect(abortReason(summary({ failed: 1, timed_out: 1, succeeded: 3 }, 50, 2))).toBeUndefined();
  });

  it('never aborts a job without a threshold', () => {
    expect(abortReason(summary({ failed: 10 }, null, 1))).toBeUndefined();
  });
});

describe('the output tail', () => {
  it('keeps the last 4 KiB as bytes, never starting inside a character', () => {
    expect(tailBytes('short')).toBe('short');
    const long = 'a'.repeat(5000) + 'end';
    expect(Buffer.byteLength(tailBytes(long))).toBe(JOB_LIMITS.outputTailBytes);
    expect(tailBytes(long).endsWith('end')).toBe(true);
    const wide = '€'.repeat(2000); // 3 bytes each
    const tail = tailBytes(wide);
    expect(tail).toBe('€'.repeat(Math.floor(JOB_LIMITS.outputTailBytes / 3)));
  });

  it('records an agent report with its result as JSON', () => {
    const end = attemptEnd(
      {
        type: 'job.result',
        execution_id: 'exe_1',
        attempt: 1,
        status: 'failed',
        exit_code: 2,
        output_tail: 'x',
        error: { code: 'exit_nonzero', message: 'exit 2' },
      },
      '2026-01-01T00:00:00.000Z',
    );
    expect(end).toEqual({
      status: 'failed',
      exit_code: 2,
      output_tail: 'x',
      result: null,
      error_code: 'exit_nonzero',
      error_message: 'exit 2',
      finished_at: '2026-01-01T00:00:00.000Z',
    });
    expect(attemptEnd({ type: 'job.result', execution_id: 'exe_1', attempt: 1, status: 'succeeded', result: { a: 1 } }, 'now').result).toBe('{"a":1}');
  });
});

describe('the work of a spec', () => {
  it('builds each kind, and refuses a spec that does not fit its kind', () => {
    expect(workOf('command', JSON.stringify({ argv: ['true'], timeout_seconds: 5 }))).toEqual({ kind: 'command', argv: ['true'], timeout_seconds: 5 });
    expect(workOf('diagnostics', JSON.stringify({ op: 'system.info' }))).toEqual({ kind: 'diagnostics', op: 'system.info' });
    const sha = 'a'.repeat(64);
    expect(workOf('file-push', JSON.stringify({ blob_id: 'blob_1', path: 'x', mode: '0600', size: 3, sha256: sha }))).toEqual({
      kind: 'file-push',
      blob_id: 'blob_1',
      path: 'x',
      mode: '0600',
      size: 3,
      sha256: sha,
    });
    expect(workOf('command', JSON.stringify({ op: 'system.info' }))).toBeUndefined();
    expect(workOf('command', 'not json')).toBeUndefined();
  });

  it('gives an attempt its own timeout plus the margin', () => {
    expect(deadlineMs({ kind: 'command', argv: ['true'], timeout_seconds: 7 }, 30)).toBe(37_000);
    expect(deadlineMs({ kind: 'diagnostics', op: 'system.info' }, 30)).toBe((JOB_LIMITS.opTimeoutSeconds + 30) * 1000);
  });
});
