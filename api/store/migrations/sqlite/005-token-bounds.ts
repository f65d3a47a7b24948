/**
 * Migration 5: access ends with the token that granted it.
 * - Sessions remember when the token that opened them expires, so they close then with the new
 *   close reason `token_expired`; open sessions get it from their token. SQLite cannot change a
 *   CHECK constraint in place, so the table is rebuilt (its indexes with it).
 * - Scopes now cover every interface. A token that had none could do everything its role allowed
 *   outside the fleet interface; it keeps exactly that, spelled out (a frozen list: scopes added
 *   later are not granted to old tokens).
 */
export default `
CREATE TABLE sessions_v5 (
  session_id        TEXT PRIMARY KEY,
  device_id         TEXT NOT NULL,
  protocol          TEXT NOT NULL CHECK (protocol IN ('diagnostics', 'shell', 'file-transfer')),
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
  CHECK ((status = 'open') = (closed_at IS NULL))
) STRICT;
INSERT INTO sessions_v5 (session_id, device_id, protocol, status, ttl_seconds, opened_by, opened_at, expires_at,
                         closed_at, close_reason, bytes_to_device, bytes_from_device, trace_id, token_id, token_expires_at)
SELECT s.session_id, s.device_id, s.protocol, s.status, s.ttl_seconds, s.opened_by, s.opened_at, s.expires_at,
       s.closed_at, s.close_reason, s.bytes_to_device, s.bytes_from_device, s.trace_id, s.token_id,
       CASE WHEN s.status = 'open' THEN (SELECT t.expires_at FROM tokens t WHERE t.token_id = s.token_id) END
  FROM sessions s;
DROP TABLE sessions;
ALTER TABLE sessions_v5 RENAME TO sessions;
CREATE UNIQUE INDEX sessions_one_open_per_protocol ON sessions (device_id, protocol) WHERE status = 'open';
CREATE INDEX sessions_open_expiry ON sessions (expires_at) WHERE status = 'open';
CREATE INDEX sessions_opened_at ON sessions (opened_at);
CREATE INDEX sessions_owner ON sessions (opened_by, opened_at);
CREATE INDEX sessions_open_by_token ON sessions (token_id) WHERE status = 'open';

UPDATE tokens SET scopes = '["sessions:read","sessions:write","devices:read","devices:write","deployments:read","deployments:write","identity:read","identity:write"]'
 WHERE scopes = '[]';
`;
