/**
 * @module The one producer of a job record and of an execution record as the HTTP interface
 * answers them (`shared/api/jobs.ts`), and of the `job.updated` event the routes publish.
 */
import type { Execution, Job, JobCounts } from '../../shared/api/jobs';
import type { ServerEvent } from '../../shared/api/events';
import type { ExecutionRow, JobRow } from '../store/jobs';

export function jobView(row: JobRow, counts: JobCounts): Job {
  return {
    job_id: row.job_id,
    kind: row.kind,
    status: row.status,
    target: row.target,
    spec: row.spec,
    max_per_minute: row.max_per_minute,
    max_in_flight: row.max_in_flight,
    abort_failure_pct: row.abort_failure_pct,
    abort_min_executed: row.abort_min_executed,
    expires_in_seconds: row.expires_in_seconds,
    created_by: row.created_by,
    created_at: row.created_at,
    finished_at: row.finished_at,
    counts,
    abort_reason: row.abort_reason,
  };
}

export function executionView(row: ExecutionRow): Execution {
  return {
    device_id: row.device_id,
    status: row.status,
    attempt: row.attempt,
    exit_code: row.exit_code,
    output_tail: row.output_tail,
    result: row.result ?? null,
    error: row.error,
    started_at: row.started_at,
    finished_at: row.finished_at,
  };
}

/** `job.updated` for a job as it is now. */
export function jobUpdated(job: Job, at: string): ServerEvent {
  return {
    event: 'job.updated',
    data: { job_id: job.job_id, kind: job.kind, status: job.status, created_by: job.created_by, counts: job.counts, at },
  };
}
