/**
 * @module The dispatcher's queries on jobs and their executions (docs/jobs.md): which jobs may
 * start executions, claiming queued executions for agents here, recording an attempt's result and
 * ending attempts. Every write is conditional on the row's state (an execution is claimed only while
 * `queued`, a result is recorded only for the `in_progress` attempt it names), so peers on one
 * PostgreSQL database never start an execution twice or record an attempt's result twice.
 */
import type { Dialect } from './db';
import { affected, type Executor } from './schema';

/** A running job as the dispatcher paces it. */
export interface StartableJob {
  job_id: string;
  kind: string;
  spec: string;
  max_per_minute: number | null;
  max_in_flight: number;
  next_start_at: string;
}

/** An execution claimed for one attempt. */
export interface ClaimedAttempt {
  execution_id: string;
  device_id: string;
  attempt: number;
}

/** An attempt ended by the server (a sweep, or an agent that restarted). */
export interface EndedAttempt extends ClaimedAttempt {
  job_id: string;
}

/** How an attempt ended, as recorded. */
export interface AttemptEnd {
  status: 'succeeded' | 'failed' | 'timed_out';
  exit_code: number | null;
  output_tail: string | null;
  /** JSON text. */
  result: string | null;
  error_code: string | null;
  error_message: string | null;
  finished_at: string;
}

const STARTABLE = ['job_id', 'kind', 'spec', 'max_per_minute', 'max_in_flight', 'next_start_at'] as const;

export function createJobRunRepo(db: Executor, dialect: Dialect) {
  return {
    /** The jobs still running (they may start executions), oldest first. */
    startable: (): Promise<StartableJob[]> => db.selectFrom('jobs').select(STARTABLE).where('status', '=', 'in_progress').orderBy('created_at').execute(),

    /**
     * The job again, locked until the transaction ends (PostgreSQL), if it still runs: the peers
     * starting its executions take turns, so the pace and the in-flight limit hold across them.
     */
    async lock(jobId: string): Promise<StartableJob | undefined> {
      const q = db.selectFrom('jobs').select(STARTABLE).where('job_id', '=', jobId).where('status', '=', 'in_progress');
      return (dialect === 'postgres' ? q.forUpdate() : q).executeTakeFirst();
    },

    /** How many of the job's executions run now, on any node. */
    async inFlight(jobId: string): Promise<number> {
      const row = await db
        .selectFrom('job_executions')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('job_id', '=', jobId)
        .where('status', '=', 'in_progress')
        .executeTakeFirstOrThrow();
      return Number(row.n);
    },

    /** Queued executions of the job on these devices, in the job's order. */
    queuedOn: (jobId: string, deviceIds: readonly string[], limit: number): Promise<Array<{ execution_id: string; seq: number }>> =>
      db
        .selectFrom('job_executions')
        .select(['execution_id', 'seq'])
        .where('job_id', '=', jobId)
        .where('status', '=', 'queued')
        .where('device_id', 'in', [...deviceIds])
        .orderBy('seq')
        .limit(limit)
        .execute(),

    /** The job's queued executions after `afterSeq`, in the job's order (a scan when most of its devices may be ready). */
    queuedAfter: (jobId: string, afterSeq: number, limit: number): Promise<Array<{ execution_id: string; seq: number; device_id: string }>> =>
      db
        .selectFrom('job_executions')
        .select(['execution_id', 'seq', 'device_id'])
        .where('job_id', '=', jobId)
        .where('status', '=', 'queued')
        .where('seq', '>', afterSeq)
        .orderBy('seq')
        .limit(limit)
        .execute(),

    /** Starts the next attempt of each execution still queued: in_progress, attempt + 1, its deadline, this node. */
    async claim(executionIds: readonly string[], start: { at: string; deadlineAt: string; node: string }): Promise<ClaimedAttempt[]> {
      if (executionIds.length === 0) return [];
      const rows = await db
        .updateTable('job_executions')
        .set((eb) => ({ status: 'in_progress', attempt: eb('attempt', '+', 1), started_at: start.at, deadline_at: start.deadlineAt, node: start.node }))
        .where('execution_id', 'in', [...executionIds])
        .where('status', '=', 'queued')
        .returning(['execution_id', 'device_id', 'attempt'])
        .execute();
      return rows.map((r) => ({ ...r, attempt: Number(r.attempt) }));
    },

    /** Moves the job's pace on: the next execution may start at `at`. */
    async paced(jobId: string, at: string): Promise<void> {
      await db.updateTable('jobs').set({ next_start_at: at }).where('job_id', '=', jobId).execute();
    },

    /** Undoes a claim whose `job.run` could not be sent (the agent left): queued again, as if never started. */
    async unclaim(a: ClaimedAttempt): Promise<boolean> {
      const result = await db
        .updateTable('job_executions')
        .set((eb) => ({ status: 'queued', attempt: eb('attempt', '-', 1), started_at: null, deadline_at: null, node: null }))
        .where('execution_id', '=', a.execution_id)
        .where('attempt', '=', a.attempt)
        .where('status', '=', 'in_progress')
        .executeTakeFirst();
      return affected(result) === 1;
    },

    /**
     * Records how the attempt `attempt` of an execution of `deviceId` ended, once: only while that
     * attempt runs. Returns the execution's job when it was recorded now, undefined otherwise (a
     * resent or late result, or one for another device).
     */
    async end(executionId: string, attempt: number, deviceId: string, end: AttemptEnd): Promise<string | undefined> {
      const row = await db
        .updateTable('job_executions')
        .set({ ...end, deadline_at: null })
        .where('execution_id', '=', executionId)
        .where('attempt', '=', attempt)
        .where('device_id', '=', deviceId)
        .where('status', '=', 'in_progress')
        .returning('job_id')
        .executeTakeFirst();
      return row?.job_id;
    },

    /** The attempts the server believes a device runs. */
    runningOn: (deviceId: string): Promise<EndedAttempt[]> =>
      db
        .selectFrom('job_executions')
        .select(['execution_id', 'device_id', 'attempt', 'job_id'])
        .where('device_id', '=', deviceId)
        .where('status', '=', 'in_progress')
        .execute()
        .then((rows) => rows.map((r) => ({ ...r, attempt: Number(r.attempt) }))),

    /** How many executions run on agents this node started them on (the gauge). */
    async inFlightOn(node: string): Promise<number> {
      const row = await db
        .selectFrom('job_executions')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('status', '=', 'in_progress')
        .where('node', '=', node)
        .executeTakeFirstOrThrow();
      return Number(row.n);
    },
  };
}
export type JobRunRepo = ReturnType<typeof createJobRunRepo>;
