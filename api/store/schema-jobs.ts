/**
 * @module The tables of jobs and blobs (migration 14) as the query builder sees them; part of
 * schema.ts, kept apart so each file stays short.
 */
import type { ColumnType } from 'kysely';

/** A column the database fills when the insert leaves it out (as in ./schema.ts, which imports this file). */
type Defaulted<T> = ColumnType<T, T | undefined, T>;

/** A job (CONTRACT 10.2): `target` and `spec` JSON as created; `next_start_at` paces its starts. */
export interface JobsTable {
  job_id: string;
  kind: string;
  status: string;
  target: string;
  spec: string;
  max_per_minute: number | null;
  max_in_flight: number;
  abort_failure_pct: number | null;
  abort_min_executed: number;
  expires_in_seconds: number;
  expires_at: string;
  next_start_at: string;
  created_by: string;
  created_at: string;
  finished_at: string | null;
  abort_reason: string | null;
  trace_id: string;
}

/** One device's run of a job; `attempt` and `node` identify the start its result belongs to. */
export interface JobExecutionsTable {
  execution_id: string;
  job_id: string;
  seq: number;
  device_id: string;
  status: string;
  attempt: Defaulted<number>;
  node: string | null;
  exit_code: number | null;
  output_tail: string | null;
  result: string | null;
  error_code: string | null;
  error_message: string | null;
  started_at: string | null;
  deadline_at: string | null;
  finished_at: string | null;
}

/** A file uploaded for `file-push`; its bytes are in `blob_chunks`. */
export interface BlobsTable {
  blob_id: string;
  size: number;
  sha256: string;
  created_by: string;
  created_at: string;
}

export interface BlobChunksTable {
  blob_id: string;
  seq: number;
  data: Buffer;
}
