/**
 * @module Runs one attempt of a job on the device, by kind (docs/jobs.md, on the device): each
 * kind's module is loaded with its first job, so an agent that never runs one holds none of them
 * (BENCHMARKS.md, "The agent as one file"). Diagnostics and file-push attempts are bounded by
 * OP_TIMEOUT_MS; a command by its own timeout.
 */
import type { JobWork } from '../../shared/protocol/jobs';
import { failed, OP_TIMEOUT_MS, type JobContext, type JobOutcome } from './outcome';

/** Runs `work`; never rejects (an unexpected error is a failed `io_error`). */
export async function runWork(work: JobWork, ctx: JobContext, opTimeoutMs = OP_TIMEOUT_MS): Promise<JobOutcome> {
  try {
    switch (work.kind) {
      case 'command':
        // Its own timeout (timeout_seconds), with the output read so far.
        return await (await import('./command-job')).runCommandJob(work, ctx);
      case 'diagnostics':
        return await withOpTimeout(ctx, opTimeoutMs, async (c) => (await import('./diagnostics-job')).runDiagnosticsJob(work, c));
      case 'file-push':
        return await withOpTimeout(ctx, opTimeoutMs, async (c) => (await import('./file-push')).runFilePushJob(work, c));
    }
  } catch (err) {
    ctx.log.warn('job attempt failed unexpectedly', { err: (err as Error).message });
    return failed('io_error', 'the device could not run the job');
  }
}

/**
 * `run` bounded by `ms`: past it, its signal aborts (a file-push stops fetching and removes its
 * temporary file) and the attempt ends `timed_out` without waiting for it.
 */
async function withOpTimeout(ctx: JobContext, ms: number, run: (ctx: JobContext) => Promise<JobOutcome>): Promise<JobOutcome> {
  const inner = new AbortController();
  const forward = () => inner.abort();
  ctx.signal.addEventListener('abort', forward, { once: true });
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<JobOutcome>((resolve) => {
    timer = setTimeout(() => {
      inner.abort();
      resolve({ status: 'timed_out', error: { code: 'timeout', message: `the device did not finish within ${Math.round(ms / 1000)} s` } });
    }, ms);
  });
  try {
    return await Promise.race([run({ ...ctx, signal: inner.signal }), late]);
  } finally {
    clearTimeout(timer);
    ctx.signal.removeEventListener('abort', forward);
  }
}
