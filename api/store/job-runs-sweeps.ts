/**
 * @module The dispatcher's sweeps and a job's end (docs/jobs.md): attempts past their deadline,
 * executions still queued when their job expires or whose device was deleted, and the transitions
 * of a job to `aborted` (its abort rule) or `completed` (nothing left to run), each written with
 * its audit event in one transaction and conditional on the job still running, so two peers never
 * both end a job.
 */
import { appendJobAudit } from './audit';
import type { ExpressionBuilder } from 'kysely';
import { affected, atomically, type Executor, type Schema } from './schema';
import type { EndedAttempt } from './job-runs';
import { EXECUTION_STATUSES, type JobCounts, type JobKind, type JobStatus } from '../../shared/api/jobs';

/** A job as its rules and its `job.updated` event need it. */
export interface JobSummary {
  job_id: string;
  kind: JobKind;
  status: JobStatus;
  created_by: string;
  trace_id: string;
  abort_failure_pct: number | null;
  abort_min_executed: number;
  counts: JobCounts;
}

const ENDED_ATTEMPT = ['execution_id', 'device_id', 'attempt', 'job_id'] as const;
const OPEN = ['queued', 'in_progress'];

/** The executions of the job in the outer query (`jobs`) that are queued or running. */
const openIn = (selectFrom: ExpressionBuilder<Schema, 'jobs'>['selectFrom']) =>
  selectFrom('job_executions')
    .select('job_executions.execution_id')
    .whereRef('job_executions.job_id', '=', 'jobs.job_id')
    .where('job_executions.status', 'in', OPEN);

export function createJobSweepRepo(db: Executor) {
  return {
    /** Ends every attempt past its deadline `timed_out` (`no_report`); returns them. */
    async pastDeadline(at: string): Promise<EndedAttempt[]> {
      const rows = await db
        .updateTable('job_executions')
        .set({
          status: 'timed_out',
          error_code: 'no_report',
          error_message: 'no result from the agent within the deadline',
          finished_at: at,
          deadline_at: null,
        })
        .where('status', '=', 'in_progress')
        .where('deadline_at', '<', at)
        .returning(ENDED_ATTEMPT)
        .execute();
      return rows.map((r) => ({ ...r, attempt: Number(r.attempt) }));
    },

    /** Ends an attempt the server gave up on (its agent restarted while it ran); false if it ended already. */
    async fail(a: EndedAttempt, code: string, message: string, at: string): Promise<boolean> {
      const result = await db
        .updateTable('job_executions')
        .set({ status: 'failed', error_code: code, error_message: message, finished_at: at, deadline_at: null })
        .where('execution_id', '=', a.execution_id)
        .where('attempt', '=', a.attempt)
        .where('status', '=', 'in_progress')
        .executeTakeFirst();
      return affected(result) === 1;
    },

    /** Ends `timed_out` (`device_offline`) the executions still queued in running jobs past their expiry; returns their jobs, one per execution. */
    async expireQueued(at: string): Promise<string[]> {
      const rows = await db
        .updateTable('job_executions')
        .set({ status: 'timed_out', error_code: 'device_offline', error_message: 'the device did not take it before the job expired', finished_at: at })
        .where('status', '=', 'queued')
        .where('job_id', 'in', (eb) => eb.selectFrom('jobs').select('job_id').where('status', '=', 'in_progress').where('expires_at', '<', at))
        .returning('job_id')
        .execute();
      return rows.map((r) => r.job_id);
    },

    /** Ends `failed` (`device_deleted`) the queued and running executions whose device no longer exists; returns their jobs, one per execution. */
    async failDeleted(at: string): Promise<string[]> {
      const rows = await db
        .updateTable('job_executions')
        .set({ status: 'failed', error_code: 'device_deleted', error_message: 'the device was deleted', finished_at: at, deadline_at: null })
        .where('status', 'in', OPEN)
        .where(({ not, exists, selectFrom }) =>
          not(exists(selectFrom('devices').select('devices.device_id').whereRef('devices.device_id', '=', 'job_executions.device_id'))),
        )
        .returning('job_id')
        .execute();
      return rows.map((r) => r.job_id);
    },

    /** Every running job, by id. */
    running: (): Promise<string[]> =>
      db
        .selectFrom('jobs')
        .select('job_id')
        .where('status', '=', 'in_progress')
        .execute()
        .then((rows) => rows.map((r) => r.job_id)),

    /** Running jobs with nothing queued or running left (their last end was recorded but not acted on). */
    idle: (): Promise<string[]> =>
      db
        .selectFrom('jobs')
        .select('job_id')
        .where('status', '=', 'in_progress')
        .where(({ not, exists, selectFrom }) => not(exists(openIn(selectFrom))))
        .execute()
        .then((rows) => rows.map((r) => r.job_id)),

    /** The job with its counts by status; undefined if it is gone. */
    async summary(jobId: string): Promise<JobSummary | undefined> {
      const job = await db
        .selectFrom('jobs')
        .select(['job_id', 'kind', 'status', 'created_by', 'trace_id', 'abort_failure_pct', 'abort_min_executed'])
        .where('job_id', '=', jobId)
        .executeTakeFirst();
      if (!job) return undefined;
      const rows = await db
        .selectFrom('job_executions')
        .select(['status', (eb) => eb.fn.countAll<number>().as('n')])
        .where('job_id', '=', jobId)
        .groupBy('status')
        .execute();
      const counts = Object.fromEntries(EXECUTION_STATUSES.map((s) => [s, 0])) as JobCounts;
      for (const r of rows) if (r.status in counts) counts[r.status as keyof JobCounts] = Number(r.n);
      return {
        ...job,
        kind: job.kind as JobKind,
        status: job.status as JobStatus,
        abort_min_executed: Number(job.abort_min_executed),
        abort_failure_pct: job.abort_failure_pct === null ? null : Number(job.abort_failure_pct),
        counts,
      };
    },

    /**
     * Aborts a running job: its queued executions end `canceled` (`job_aborted`), `job.aborted` is
     * audited. Those running finish and are still recorded. False if the job had ended already.
     */
    abort: (job: JobSummary, reason: string, at: string): Promise<boolean> =>
      atomically(db, async (tx) => {
        const ended = await tx
          .updateTable('jobs')
          .set({ status: 'aborted', abort_reason: reason, finished_at: at })
          .where('job_id', '=', job.job_id)
          .where('status', '=', 'in_progress')
          .executeTakeFirst();
        if (affected(ended) !== 1) return false;
        await tx
          .updateTable('job_executions')
          .set({ status: 'canceled', error_code: 'job_aborted', error_message: `the job was aborted: ${reason}`, finished_at: at })
          .where('job_id', '=', job.job_id)
          .where('status', '=', 'queued')
          .execute();
        await appendJobAudit(tx, { event: 'job.aborted', job_id: job.job_id, actor: 'system', owner: job.created_by, reason, trace_id: job.trace_id, at });
        return true;
      }),

    /** Completes a running job with nothing queued or running left, audited `job.completed`; false otherwise. */
    complete: (job: JobSummary, at: string): Promise<boolean> =>
      atomically(db, async (tx) => {
        const ended = await tx
          .updateTable('jobs')
          .set({ status: 'completed', finished_at: at })
          .where('job_id', '=', job.job_id)
          .where('status', '=', 'in_progress')
          .where(({ not, exists, selectFrom }) => not(exists(openIn(selectFrom))))
          .executeTakeFirst();
        if (affected(ended) !== 1) return false;
        await appendJobAudit(tx, {
          event: 'job.completed',
          job_id: job.job_id,
          actor: 'system',
          owner: job.created_by,
          reason: null,
          trace_id: job.trace_id,
          at,
        });
        return true;
      }),
  };
}
export type JobSweepRepo = ReturnType<typeof createJobSweepRepo>;
