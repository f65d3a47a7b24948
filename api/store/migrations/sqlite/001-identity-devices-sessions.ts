/** Migration 1: users and tokens, the device registry, remote-access sessions and their audit. */
export default `
CREATE TABLE users (
  username      TEXT PRIMARY KEY,
  role          TEXT CHECK (role IN ('developer', 'platform-engineer', 'administrator')),
  kind          TEXT NOT NULL CHECK (kind IN ('human', 'service')),
  password_hash TEXT,
  created_at    TEXT NOT NULL
) STRICT;

CREATE TABLE tokens (
  token_id   TEXT PRIMARY KEY,
  token_hash TEXT NOT NULL UNIQUE,
  username   TEXT NOT NULL REFERENCES users (username) ON DELETE CASCADE,
  scopes     TEXT NOT NULL DEFAULT '[]',
  tenants    TEXT NOT NULL DEFAULT '[]',
  created_at TEXT NOT NULL,
  expires_at TEXT,
  revoked_at TEXT
) STRICT;
CREATE INDEX tokens_username ON tokens (username);

CREATE TABLE devices (
  device_id        TEXT PRIMARY KEY,
  agent_token_hash TEXT NOT NULL UNIQUE,
  labels           TEXT NOT NULL DEFAULT '{}',
  agent_status     TEXT NOT NULL DEFAULT 'offline' CHECK (agent_status IN ('online', 'offline')),
  agent_version    TEXT,
  last_seen_at     TEXT,
  created_at       TEXT NOT NULL
) STRICT;

CREATE TABLE sessions (
  session_id        TEXT PRIMARY KEY,
  device_id         TEXT NOT NULL,
  protocol          TEXT NOT NULL CHECK (protocol IN ('diagnostics', 'shell', 'file-transfer')),
  status            TEXT NOT NULL CHECK (status IN ('open', 'closed')),
  ttl_seconds       INTEGER NOT NULL CHECK (ttl_seconds BETWEEN 60 AND 28800),
  opened_by         TEXT NOT NULL,
  opened_at         TEXT NOT NULL,
  expires_at        TEXT NOT NULL,
  closed_at         TEXT,
  close_reason      TEXT CHECK (close_reason IN ('closed', 'expired', 'device_deleted', 'server_shutdown')),
  bytes_to_device   INTEGER NOT NULL DEFAULT 0,
  bytes_from_device INTEGER NOT NULL DEFAULT 0,
  trace_id          TEXT NOT NULL,
  CHECK ((status = 'open') = (closed_at IS NULL))
) STRICT;
-- The rule "one open session per protocol per device", held by the database itself so that
-- racing opens cannot both succeed.
CREATE UNIQUE INDEX sessions_one_open_per_protocol ON sessions (device_id, protocol) WHERE status = 'open';
CREATE INDEX sessions_open_expiry ON sessions (expires_at) WHERE status = 'open';
CREATE INDEX sessions_opened_at ON sessions (opened_at);
CREATE INDEX sessions_owner ON sessions (opened_by, opened_at);

CREATE TABLE audit_events (
  id         INTEGER PRIMARY KEY AUTOINCREMENT,
  event      TEXT NOT NULL,
  session_id TEXT NOT NULL,
  device_id  TEXT NOT NULL,
  protocol   TEXT NOT NULL,
  actor      TEXT NOT NULL,
  owner      TEXT NOT NULL,
  reason     TEXT,
  at         TEXT NOT NULL,
  trace_id   TEXT NOT NULL
) STRICT;
CREATE INDEX audit_events_session ON audit_events (session_id);
CREATE INDEX audit_events_owner ON audit_events (owner, id);

-- Server-side secrets (the stream ticket key), created on first use.
CREATE TABLE secrets (
  name  TEXT PRIMARY KEY,
  value BLOB NOT NULL
) STRICT;
`;
