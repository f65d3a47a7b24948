/**
 * @module Jobs and their executions as the HTTP interface reads and writes them (CONTRACT 10.2,
 * docs/jobs.md): creating a job with one execution per target device in one transaction, reading,
 * listing (paged, by status, by creator), counting executions by status, paging executions, and
 * canceling. What the dispatcher does to them (claims, results, sweeps) is `./job-runs.ts`.
 */
import { randomBase32 } from '../../shared/ids';
import { EXECUTION_STATUSES, type ExecutionStatus, type JobCounts, type JobKind, type JobStatus, type JobTarget } from '../../shared/api/jobs';
import { createJobTargetQueries } from './job-targets';
import type { JobsTable } from './schema-jobs';
import { affected, atomically, type Executor, type Row } from './schema';

/** A job as read: the table's columns, with its kind and status typed and its JSON parsed. */
export type JobRow = Omit<JobsTable, 'kind' | 'status' | 'target' | 'spec'> & {
  kind: JobKind;
  status: JobStatus;
  /** As the request gave it. */
  target: JobTarget;
  /** What runs on each device, defaults filled in. */
  spec: Record<string, unknown>;
};

/** What creating a job takes; the id, status, expiry and pace follow from it. */
export type NewJob = Omit<JobRow, 'job_id' | 'status' | 'expires_at' | 'next_start_at' | 'finished_at' | 'abort_reason'>;

export interface ExecutionRow {
  execution_id: string;
  job_id: string;
  seq: number;
  device_id: string;
  status: ExecutionStatus;
  attempt: number;
  exit_code: number | null;
  output_tail: string | null;
  /** A diagnostics execution's result (parsed JSON). */
  result: unknown;
  error: { code: string; message: string } | null;
  started_at: string | null;
  finished_at: string | null;
}

export interface JobQuery {
  status?: JobStatus | undefined;
  /** Only jobs this user created (visibility for non-administrators). */
  created_by?: string | undefined;
  limit: number;
  offset: number;
}

export interface ExecutionQuery {
  status?: ExecutionStatus | undefined;
  limit: number;
  offset: number;
}

/**
 * Rows per INSERT of executions: 5 values each stays far below both databases' limits on bound
 * parameters (SQLite 32,766; PostgreSQL 65,535) while 10,000 executions take 20 statements.
 */
const INSERT_BATCH = 500;

export const newJobId = (): string => `job_${randomBase32(20)}`;
const newExecutionId = (): string => `exe_${randomBase32(20)}`;

const toJob = (r: Row<'jobs'>): JobRow => ({
  ...r,
  kind: r.kind as JobKind,
  status: r.status as JobStatus,
  target: JSON.parse(r.target) as JobTarget,
  spec: JSON.parse(r.spec) as Record<string, unknown>,
});

const toExecution = (r: Row<'job_executions'>): ExecutionRow => ({
  execution_id: r.execution_id,
  job_id: r.job_id,
  seq: r.seq,
  device_id: r.device_id,
  status: r.status as ExecutionStatus,
  attempt: r.attempt,
  exit_code: r.exit_code,
  output_tail: r.output_tail,
  result: r.result === null ? null : (JSON.parse(r.result) as unknown),
  error: r.error_code === null ? null : { code: r.error_code, message: r.error_message ?? '' },
  started_at: r.started_at,
  finished_at: r.finished_at,
});

/** Every status at 0: a job's counts before any row is counted. */
export const zeroCounts = (): JobCounts => Object.fromEntries(EXECUTION_STATUSES.map((s) => [s, 0])) as JobCounts;

const plusSeconds = (iso: string, s: number): string => new Date(Date.parse(iso) + s * 1000).toISOString();

export function createJobRepo(db: Executor) {
  return {
    ...createJobTargetQueries(db),
    /**
     * A new job `in_progress` with one `queued` execution per device, `seq` in the order given, in
     * one transaction (or the caller's). Its expiry is `created_at + expires_in_seconds`; its
     * first execution may start at once.
     */
    async create(job: NewJob, deviceIds: readonly string[]): Promise<JobRow> {
      const row: JobRow = {
        ...job,
        job_id: newJobId(),
        status: 'in_progress',
        expires_at: plusSeconds(job.created_at, job.expires_in_seconds),
        next_start_at: job.created_at,
        finished_at: null,
        abort_reason: null,
      };
      await atomically(db, async (tx) => {
        await tx
          .insertInto('jobs')
          .values({ ...row, target: JSON.stringify(row.target), spec: JSON.stringify(row.spec) })
          .execute();
        for (let from = 0; from < deviceIds.length; from += INSERT_BATCH) {
          const values = deviceIds.slice(from, from + INSERT_BATCH).map((device_id, i) => ({
            execution_id: newExecutionId(),
            job_id: row.job_id,
            seq: from + i,
            device_id,
            status: 'queued',
          }));
          await tx.insertInto('job_executions').values(values).execute();
        }
      });
      return row;
    },

    async get(jobId: string): Promise<JobRow | undefined> {
      const row = await db.selectFrom('jobs').selectAll().where('job_id', '=', jobId).executeTakeFirst();
      return row && toJob(row);
    },

    /** A page of jobs, newest first, with how many match in all. */
    async list(q: JobQuery): Promise<{ items: JobRow[]; total: number }> {
      let base = db.selectFrom('jobs');
      if (q.status !== undefined) base = base.where('status', '=', q.status);
      if (q.created_by !== undefined) base = base.where('created_by', '=', q.created_by);
      const [rows, count] = await Promise.all([
        base.selectAll().orderBy('created_at', 'desc').orderBy('job_id', 'desc').limit(q.limit).offset(q.offset).execute(),
        base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow(),
      ]);
      return { items: rows.map(toJob), total: Number(count.n) };
    },

    /** Executions by status of each job named (every status present, 0 where none), in one GROUP BY. */
    async counts(jobIds: readonly string[]): Promise<Map<string, JobCounts>> {
      const out = new Map<string, JobCounts>(jobIds.map((id) => [id, zeroCounts()]));
      if (jobIds.length === 0) return out;
      const rows = await db
        .selectFrom('job_executions')
        .select((eb) => ['job_id', 'status', eb.fn.countAll<number>().as('n')])
        .where('job_id', 'in', jobIds)
        .groupBy(['job_id', 'status'])
        .execute();
      for (const r of rows) {
        const counts = out.get(r.job_id);
        if (counts && r.status in counts) counts[r.status as ExecutionStatus] = Number(r.n);
      }
      return out;
    },

    /** A page of a job's executions in `seq` order, with how many match in all. */
    async executions(jobId: string, q: ExecutionQuery): Promise<{ items: ExecutionRow[]; total: number }> {
      let base = db.selectFrom('job_executions').where('job_id', '=', jobId);
      if (q.status !== undefined) base = base.where('status', '=', q.status);
      const [rows, count] = await Promise.all([
        base.selectAll().orderBy('seq').limit(q.limit).offset(q.offset).execute(),
        base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow(),
      ]);
      return { items: rows.map(toExecution), total: Number(count.n) };
    },

    /**
     * Cancels a running job: it becomes `canceled` and its queued executions `canceled` with
     * error `job_canceled`; those in progress run to their end and are still recorded. False
     * (nothing changed) when the job is not running, so of racing cancels on any peers one wins.
     */
    async cancel(jobId: string, at: string, actor: string): Promise<boolean> {
      return atomically(db, async (tx) => {
        const ended = await tx
          .updateTable('jobs')
          .set({ status: 'canceled', finished_at: at })
          .where('job_id', '=', jobId)
          .where('status', '=', 'in_progress')
          .executeTakeFirst();
        if (affected(ended) !== 1) return false;
        await tx
          .updateTable('job_executions')
          .set({ status: 'canceled', error_code: 'job_canceled', error_message: `the job was canceled by ${actor}`, finished_at: at })
          .where('job_id', '=', jobId)
          .where('status', '=', 'queued')
          .execute();
        return true;
      });
    },
  };
}
export type JobRepo = ReturnType<typeof createJobRepo>;
