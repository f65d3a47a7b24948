/**
 * @module The dispatcher's sweeps (docs/jobs.md, never stuck): every attempt has a deadline after
 * which it ends `timed_out` (`no_report`, and its agent, if here, is told to stop it); executions
 * still queued when their job expires end `timed_out` (`device_offline`); those of a deleted device
 * end `failed` (`device_deleted`); a running job left with nothing to run is looked at again (it
 * completes), and every running job's abort rule is applied again now and then (a result recorded
 * just before a restart was never looked at). Each is one conditional write, harmless when a peer sweeps at the same time.
 */
import type { Counter } from '../../shared/metrics';
import type { RelayToAgentMessage } from '../../shared/protocol/control-channel';
import type { Store } from '../store/index';
import { createJobSweepRepo } from '../store/job-runs-sweeps';

/** Deleted devices are looked for once every this many sweeps (each looks at every open execution). */
const DELETED_EVERY = 5;

export type JobCancelMessage = Extract<RelayToAgentMessage, { type: 'job.cancel' }>;

export interface SweepDeps {
  store: Store;
  /** Tells the agent of `deviceId`, if it is here, to stop an attempt. */
  cancel(deviceId: string, msg: JobCancelMessage): void;
  /** A job whose executions changed. */
  changed(jobId: string): void;
  /** Applies the rules of these running jobs (changed or not). */
  review(jobIds: readonly string[]): Promise<void>;
  ended: Counter;
}

export function createSweeper(deps: SweepDeps) {
  const sweeps = createJobSweepRepo(deps.store.db);
  let rounds = 0;

  function ended(jobIds: readonly string[], status: string, reason: string): void {
    if (jobIds.length > 0) deps.ended.inc({ status, reason }, jobIds.length);
    for (const jobId of new Set(jobIds)) deps.changed(jobId);
  }

  /** One sweep at `t` (ms). */
  return async function sweep(t: number): Promise<void> {
    const at = new Date(t).toISOString();
    const late = await sweeps.pastDeadline(at);
    for (const a of late) deps.cancel(a.device_id, { type: 'job.cancel', execution_id: a.execution_id, attempt: a.attempt });
    ended(
      late.map((a) => a.job_id),
      'timed_out',
      'no_report',
    );
    ended(await sweeps.expireQueued(at), 'timed_out', 'device_offline');
    if (rounds++ % DELETED_EVERY === 0) {
      ended(await sweeps.failDeleted(at), 'failed', 'device_deleted');
      // The first sweep after a start too: a job whose last result came just before a restart.
      await deps.review(await sweeps.running());
    }
    for (const jobId of await sweeps.idle()) deps.changed(jobId);
  };
}
