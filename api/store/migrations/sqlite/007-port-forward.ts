/**
 * Migration 7: port forwarding (docs/http-api.md, sessions).
 * - Sessions may speak `port-forward` and then name their `targets` (a JSON array of canonical
 *   `HOST:PORT`; null for the other protocols). SQLite cannot change a CHECK constraint in place,
 *   so the table is rebuilt (its indexes with it), as in migration 5.
 * - Audit events of such sessions name the targets too.
 * - A device remembers the allow-list its agent announced when it last connected (a JSON array of
 *   `HOST:PORT` patterns; null: none announced, so it does not forward ports).
 */
export default `
CREATE TABLE sessions_v7 (
  session_id        TEXT PRIMARY KEY,
  device_id         TEXT NOT NULL,
  protocol          TEXT NOT NULL CHECK (protocol IN ('diagnostics', 'shell', 'file-transfer', 'port-forward')),
  status            TEXT NOT NULL CHECK (status IN ('open', 'closed')),
  ttl_seconds       INTEGER NOT NULL CHECK (ttl_seconds BETWEEN 60 AND 28800),
  opened_by         TEXT NOT NULL,
  opened_at         TEXT NOT NULL,
  expires_at        TEXT NOT NULL,
  closed_at         TEXT,
  close_reason      TEXT CHECK (close_reason IN ('closed', 'expired', 'token_expired', 'device_deleted', 'server_shutdown')),
  bytes_to_device   INTEGER NOT NULL DEFAULT 0,
  bytes_from_device INTEGER NOT NULL DEFAULT 0,
  trace_id          TEXT NOT NULL,
  token_id          TEXT,
  token_expires_at  TEXT,
  targets           TEXT,
  CHECK ((status = 'open') = (closed_at IS NULL)),
  CHECK ((protocol = 'port-forward') = (targets IS NOT NULL))
) STRICT;
INSERT INTO sessions_v7 (session_id, device_id, protocol, status, ttl_seconds, opened_by, opened_at, expires_at,
                         closed_at, close_reason, bytes_to_device, bytes_from_device, trace_id, token_id, token_expires_at)
SELECT session_id, device_id, protocol, status, ttl_seconds, opened_by, opened_at, expires_at,
       closed_at, close_reason, bytes_to_device, bytes_from_device, trace_id, token_id, token_expires_at
  FROM sessions;
DROP TABLE sessions;
ALTER TABLE sessions_v7 RENAME TO sessions;
CREATE UNIQUE INDEX sessions_one_open_per_protocol ON sessions (device_id, protocol) WHERE status = 'open';
CREATE INDEX sessions_open_expiry ON sessions (expires_at) WHERE status = 'open';
CREATE INDEX sessions_opened_at ON sessions (opened_at);
CREATE INDEX sessions_owner ON sessions (opened_by, opened_at);
CREATE INDEX sessions_open_by_token ON sessions (token_id) WHERE status = 'open';

ALTER TABLE audit_events ADD COLUMN targets TEXT;

ALTER TABLE devices ADD COLUMN forward_allow TEXT;
`;
