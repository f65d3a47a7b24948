/**
 * Migration 14: jobs (CONTRACT 10.2; docs/jobs.md).
 * - `jobs`: one operation across many devices; `target` and `spec` are JSON as created (defaults
 *   filled in); `next_start_at` is the pace's compare-and-set cell (the earliest time the next
 *   execution may start), `expires_at` the time queued executions give up on offline devices.
 * - `job_executions`: one row per device of a job, `seq` its order within the job; `attempt` counts
 *   starts and `node` names the node run that started the current one, so a result is recorded once.
 * - `blobs` and `blob_chunks`: files uploaded once for `file-push`, kept in the database in chunks
 *   (as recordings' chunks) so every peer can serve them.
 * - `audit_events` gains job events: a `job_id` column, and `session_id`, `device_id`, `protocol`
 *   become NULL-able (a job event has none). SQLite cannot drop NOT NULL in place, so the table is
 *   rebuilt keeping its ids, its AUTOINCREMENT counter and its indexes.
 */
export default `
CREATE TABLE jobs (
  job_id             TEXT PRIMARY KEY,
  kind               TEXT NOT NULL CHECK (kind IN ('diagnostics', 'command', 'file-push')),
  status             TEXT NOT NULL CHECK (status IN ('in_progress', 'completed', 'canceled', 'aborted')),
  target             TEXT NOT NULL,
  spec               TEXT NOT NULL,
  max_per_minute     INTEGER,
  max_in_flight      INTEGER NOT NULL,
  abort_failure_pct  INTEGER,
  abort_min_executed INTEGER NOT NULL,
  expires_in_seconds INTEGER NOT NULL,
  expires_at         TEXT NOT NULL,
  next_start_at      TEXT NOT NULL,
  created_by         TEXT NOT NULL,
  created_at         TEXT NOT NULL,
  finished_at        TEXT,
  abort_reason       TEXT,
  trace_id           TEXT NOT NULL,
  CHECK ((status = 'in_progress') = (finished_at IS NULL))
) STRICT;
CREATE INDEX jobs_status ON jobs (status, created_at);
CREATE INDEX jobs_creator ON jobs (created_by, created_at);

CREATE TABLE job_executions (
  execution_id  TEXT PRIMARY KEY,
  job_id        TEXT NOT NULL REFERENCES jobs (job_id) ON DELETE CASCADE,
  seq           INTEGER NOT NULL,
  device_id     TEXT NOT NULL,
  status        TEXT NOT NULL CHECK (status IN ('queued', 'in_progress', 'succeeded', 'failed', 'timed_out', 'canceled')),
  attempt       INTEGER NOT NULL DEFAULT 0,
  node          TEXT,
  exit_code     INTEGER,
  output_tail   TEXT,
  result        TEXT,
  error_code    TEXT,
  error_message TEXT,
  started_at    TEXT,
  deadline_at   TEXT,
  finished_at   TEXT
) STRICT;
CREATE UNIQUE INDEX job_executions_seq ON job_executions (job_id, seq);
CREATE INDEX job_executions_job ON job_executions (job_id, status, seq);
CREATE INDEX job_executions_device ON job_executions (device_id, status);
CREATE INDEX job_executions_deadline ON job_executions (status, deadline_at);

CREATE TABLE blobs (
  blob_id    TEXT PRIMARY KEY,
  size       INTEGER NOT NULL,
  sha256     TEXT NOT NULL,
  created_by TEXT NOT NULL,
  created_at TEXT NOT NULL
) STRICT;
CREATE TABLE blob_chunks (
  blob_id TEXT NOT NULL REFERENCES blobs (blob_id) ON DELETE CASCADE,
  seq     INTEGER NOT NULL,
  data    BLOB NOT NULL,
  PRIMARY KEY (blob_id, seq)
) STRICT;

CREATE TABLE audit_events_v14 (
  id         INTEGER PRIMARY KEY AUTOINCREMENT,
  event      TEXT NOT NULL,
  session_id TEXT,
  device_id  TEXT,
  protocol   TEXT,
  actor      TEXT NOT NULL,
  owner      TEXT NOT NULL,
  reason     TEXT,
  at         TEXT NOT NULL,
  trace_id   TEXT NOT NULL,
  targets    TEXT,
  job_id     TEXT
) STRICT;
INSERT INTO audit_events_v14 (id, event, session_id, device_id, protocol, actor, owner, reason, at, trace_id, targets)
SELECT id, event, session_id, device_id, protocol, actor, owner, reason, at, trace_id, targets FROM audit_events;
DELETE FROM sqlite_sequence WHERE name = 'audit_events_v14';
INSERT INTO sqlite_sequence (name, seq) SELECT 'audit_events_v14', seq FROM sqlite_sequence WHERE name = 'audit_events';
DROP TABLE audit_events;
ALTER TABLE audit_events_v14 RENAME TO audit_events;
CREATE INDEX audit_events_session ON audit_events (session_id);
CREATE INDEX audit_events_owner ON audit_events (owner, id);
CREATE INDEX audit_events_job ON audit_events (job_id);
`;
