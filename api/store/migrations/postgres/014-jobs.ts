/** Migration 14 on PostgreSQL: as SQLite's (sqlite/014-jobs.ts); audit_events changes in place. */
export default `
CREATE TABLE jobs (
  job_id             TEXT COLLATE "C" PRIMARY KEY,
  kind               TEXT COLLATE "C" NOT NULL CHECK (kind IN ('diagnostics', 'command', 'file-push')),
  status             TEXT COLLATE "C" NOT NULL CHECK (status IN ('in_progress', 'completed', 'canceled', 'aborted')),
  target             TEXT COLLATE "C" NOT NULL,
  spec               TEXT COLLATE "C" NOT NULL,
  max_per_minute     INTEGER,
  max_in_flight      INTEGER NOT NULL,
  abort_failure_pct  INTEGER,
  abort_min_executed INTEGER NOT NULL,
  expires_in_seconds INTEGER NOT NULL,
  expires_at         TEXT COLLATE "C" NOT NULL,
  next_start_at      TEXT COLLATE "C" NOT NULL,
  created_by         TEXT COLLATE "C" NOT NULL,
  created_at         TEXT COLLATE "C" NOT NULL,
  finished_at        TEXT COLLATE "C",
  abort_reason       TEXT COLLATE "C",
  trace_id           TEXT COLLATE "C" NOT NULL,
  CHECK ((status = 'in_progress') = (finished_at IS NULL))
);
CREATE INDEX jobs_status ON jobs (status, created_at);
CREATE INDEX jobs_creator ON jobs (created_by, created_at);

CREATE TABLE job_executions (
  execution_id  TEXT COLLATE "C" PRIMARY KEY,
  job_id        TEXT COLLATE "C" NOT NULL REFERENCES jobs (job_id) ON DELETE CASCADE,
  seq           INTEGER NOT NULL,
  device_id     TEXT COLLATE "C" NOT NULL,
  status        TEXT COLLATE "C" NOT NULL CHECK (status IN ('queued', 'in_progress', 'succeeded', 'failed', 'timed_out', 'canceled')),
  attempt       INTEGER NOT NULL DEFAULT 0,
  node          TEXT COLLATE "C",
  exit_code     INTEGER,
  output_tail   TEXT COLLATE "C",
  result        TEXT COLLATE "C",
  error_code    TEXT COLLATE "C",
  error_message TEXT COLLATE "C",
  started_at    TEXT COLLATE "C",
  deadline_at   TEXT COLLATE "C",
  finished_at   TEXT COLLATE "C"
);
CREATE UNIQUE INDEX job_executions_seq ON job_executions (job_id, seq);
CREATE INDEX job_executions_job ON job_executions (job_id, status, seq);
CREATE INDEX job_executions_device ON job_executions (device_id, status);
CREATE INDEX job_executions_deadline ON job_executions (status, deadline_at);

CREATE TABLE blobs (
  blob_id    TEXT COLLATE "C" PRIMARY KEY,
  size       BIGINT NOT NULL,
  sha256     TEXT COLLATE "C" NOT NULL,
  created_by TEXT COLLATE "C" NOT NULL,
  created_at TEXT COLLATE "C" NOT NULL
);
CREATE TABLE blob_chunks (
  blob_id TEXT COLLATE "C" NOT NULL REFERENCES blobs (blob_id) ON DELETE CASCADE,
  seq     INTEGER NOT NULL,
  data    BYTEA NOT NULL,
  PRIMARY KEY (blob_id, seq)
);

ALTER TABLE audit_events ALTER COLUMN session_id DROP NOT NULL;
ALTER TABLE audit_events ALTER COLUMN device_id DROP NOT NULL;
ALTER TABLE audit_events ALTER COLUMN protocol DROP NOT NULL;
ALTER TABLE audit_events ADD COLUMN job_id TEXT COLLATE "C";
CREATE INDEX audit_events_job ON audit_events (job_id);
`;
