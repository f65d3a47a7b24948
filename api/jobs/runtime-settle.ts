/**
 * @module A job's rules after its executions change (docs/jobs.md): the abort rule (once at least
 * `abort_min_executed` executions ended, a failed share at or over `abort_failure_pct` aborts the
 * job and cancels what has not started), completion (nothing queued or running left), and its
 * `job.updated` event: at most one every `gapMs` per job while it runs, and always its last change.
 */
import type { Logger } from '../../shared/log';
import type { ServerEvent } from '../../shared/api/events';
import type { Store } from '../store/index';
import { createJobSweepRepo, type JobSummary } from '../store/job-runs-sweeps';

/** `job.updated` (shared/api/events.ts). */
export type JobEvent = Extract<ServerEvent, { event: 'job.updated' }>;

export interface SettleDeps {
  store: Store;
  log: Logger;
  now: () => number;
  /** The least time between two `job.updated` of one running job. */
  gapMs: number;
  publish(e: JobEvent): void;
}

/** Why `job` must abort now, or undefined. */
export function abortReason(job: JobSummary): string | undefined {
  if (job.abort_failure_pct === null) return undefined;
  const { succeeded, failed, timed_out } = job.counts;
  const ended = succeeded + failed + timed_out;
  const bad = failed + timed_out;
  if (ended === 0 || ended < job.abort_min_executed || bad * 100 < job.abort_failure_pct * ended) return undefined;
  return `${bad} of ${ended} executions failed (${Math.round((bad * 100) / ended)}% ≥ ${job.abort_failure_pct}%)`;
}

export function createSettler(deps: SettleDeps) {
  const sweeps = createJobSweepRepo(deps.store.db);
  /** Jobs changed since they were last looked at. */
  const changed = new Set<string>();
  /** When each running job's last event went out, and whether a change waits for the next one. */
  const lastEvent = new Map<string, number>();
  const waiting = new Set<string>();

  function publish(job: JobSummary, t: number): void {
    waiting.delete(job.job_id);
    if (job.status === 'in_progress') lastEvent.set(job.job_id, t);
    else lastEvent.delete(job.job_id);
    const { job_id, kind, status, created_by, counts } = job;
    deps.publish({ event: 'job.updated', data: { job_id, kind, status, created_by, counts, at: new Date(t).toISOString() } });
  }

  /** Applies the job's rules; returns it as it is now (undefined if it is gone) and whether this call ended it. */
  async function rules(jobId: string, t: number): Promise<{ job: JobSummary | undefined; ended: boolean }> {
    const job = await sweeps.summary(jobId);
    if (!job || job.status !== 'in_progress') return { job, ended: false };
    const at = new Date(t).toISOString();
    const reason = abortReason(job);
    if (reason !== undefined) {
      const ended = await sweeps.abort(job, reason, at);
      if (ended) deps.log.warn('job aborted by its abort rule', { job_id: jobId, reason });
      return { job: await sweeps.summary(jobId), ended };
    }
    if (job.counts.queued + job.counts.in_progress === 0 && (await sweeps.complete(job, at))) {
      deps.log.info('job completed', { job_id: jobId, counts: job.counts });
      return { job: await sweeps.summary(jobId), ended: true };
    }
    return { job, ended: false };
  }

  return {
    /** Marks a job changed: its rules are applied and its event published on the next round. */
    changed(jobId: string): void {
      changed.add(jobId);
    },
    /**
     * Applies the rules of running jobs whether or not they changed here: a result recorded just
     * before a restart (or by a peer that died) was never looked at, and its abort rule would wait
     * for the next change. Publishes only for the jobs that end now (the others did not change).
     */
    async review(jobIds: readonly string[]): Promise<void> {
      const t = deps.now();
      for (const jobId of jobIds) {
        // Only what this review ended: a job another round (or peer) ended was published there.
        const { job, ended } = await rules(jobId, t);
        if (job && ended) publish(job, t);
      }
    },
    /** Applies the rules of the jobs that changed and publishes their events (throttled). */
    async round(): Promise<void> {
      const t = deps.now();
      const jobs = [...changed];
      changed.clear();
      for (const jobId of jobs) {
        try {
          const { job } = await rules(jobId, t);
          if (!job) continue;
          if (job.status !== 'in_progress' || t - (lastEvent.get(jobId) ?? -Infinity) >= deps.gapMs) publish(job, t);
          else waiting.add(jobId);
        } catch (err) {
          changed.add(jobId); // tried again on the next round
          throw err;
        }
      }
      for (const jobId of [...waiting]) {
        if (changed.has(jobId) || t - (lastEvent.get(jobId) ?? -Infinity) < deps.gapMs) continue;
        const job = await sweeps.summary(jobId);
        if (job) publish(job, t);
        else waiting.delete(jobId);
      }
    },
  };
}
export type Settler = ReturnType<typeof createSettler>;
