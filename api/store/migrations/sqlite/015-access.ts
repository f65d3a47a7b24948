/**
 * Migration 15: access requests and webhooks (CONTRACT 10.3; docs/access.md).
 * - `access_policies`: the devices (by labels, JSON) and protocols (JSON) that need an approved
 *   request; DELETE marks one deleted (`deleted_at`) so the requests it governed keep their history.
 * - `access_requests`: one row per request, never deleted; `expires_at` ends a pending one,
 *   `starts_at`/`ends_at` bound the grant from approval, the review and revoke columns say who and why.
 * - `sessions` gains `access_request_id` (the grant it was opened under) and the close reasons
 *   `access_expired` and `access_revoked`; SQLite cannot change a CHECK in place, so the table is
 *   rebuilt with its indexes, as migration 10 did.
 * - `audit_events` gains `request_id` (access events).
 * - `webhooks` and `webhook_deliveries`: the subscribers and the durable outbox of their deliveries;
 *   `body` is the exact JSON posted, so every retry sends the same bytes and signature;
 *   `claimed_until` is a sender's lease.
 */
export default `
CREATE TABLE access_policies (
  policy_id            TEXT PRIMARY KEY,
  name                 TEXT NOT NULL,
  labels               TEXT NOT NULL,
  protocols            TEXT NOT NULL,
  max_duration_seconds INTEGER NOT NULL,
  created_by           TEXT NOT NULL,
  created_at           TEXT NOT NULL,
  deleted_at           TEXT
) STRICT;

CREATE TABLE access_requests (
  request_id       TEXT PRIMARY KEY,
  requester        TEXT NOT NULL,
  device_id        TEXT NOT NULL,
  protocols        TEXT NOT NULL,
  reason           TEXT NOT NULL,
  duration_seconds INTEGER NOT NULL,
  status           TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'canceled', 'expired', 'revoked', 'ended')),
  created_at       TEXT NOT NULL,
  expires_at       TEXT NOT NULL,
  reviewed_by      TEXT,
  review_reason    TEXT,
  reviewed_at      TEXT,
  starts_at        TEXT,
  ends_at          TEXT,
  revoked_by       TEXT,
  revoke_reason    TEXT,
  revoked_at       TEXT
) STRICT;
CREATE INDEX access_requests_requester ON access_requests (requester, created_at);
CREATE INDEX access_requests_device ON access_requests (device_id, status);
CREATE INDEX access_requests_pending ON access_requests (status, expires_at);
CREATE INDEX access_requests_grant_end ON access_requests (status, ends_at);

CREATE TABLE sessions_v15 (
  session_id        TEXT PRIMARY KEY,
  device_id         TEXT NOT NULL,
  protocol          TEXT NOT NULL CHECK (protocol IN ('diagnostics', 'shell', 'file-transfer', 'port-forward')),
  status            TEXT NOT NULL CHECK (status IN ('open', 'closed')),
  ttl_seconds       INTEGER NOT NULL CHECK (ttl_seconds BETWEEN 60 AND 28800),
  opened_by         TEXT NOT NULL,
  opened_at         TEXT NOT NULL,
  expires_at        TEXT NOT NULL,
  closed_at         TEXT,
  close_reason      TEXT CHECK (close_reason IN ('closed', 'expired', 'token_expired', 'device_deleted', 'server_shutdown', 'idle',
                                                 'access_expired', 'access_revoked')),
  bytes_to_device   INTEGER NOT NULL DEFAULT 0,
  bytes_from_device INTEGER NOT NULL DEFAULT 0,
  trace_id          TEXT NOT NULL,
  token_id          TEXT,
  token_expires_at  TEXT,
  targets           TEXT,
  access_request_id TEXT,
  CHECK ((status = 'open') = (closed_at IS NULL)),
  CHECK ((protocol = 'port-forward') = (targets IS NOT NULL))
) STRICT;
INSERT INTO sessions_v15 (session_id, device_id, protocol, status, ttl_seconds, opened_by, opened_at, expires_at,
                          closed_at, close_reason, bytes_to_device, bytes_from_device, trace_id, token_id, token_expires_at, targets)
SELECT session_id, device_id, protocol, status, ttl_seconds, opened_by, opened_at, expires_at,
       closed_at, close_reason, bytes_to_device, bytes_from_device, trace_id, token_id, token_expires_at, targets
  FROM sessions;
DROP TABLE sessions;
ALTER TABLE sessions_v15 RENAME TO sessions;
CREATE UNIQUE INDEX sessions_one_open_per_protocol ON sessions (device_id, protocol) WHERE status = 'open';
CREATE INDEX sessions_open_expiry ON sessions (expires_at) WHERE status = 'open';
CREATE INDEX sessions_opened_at ON sessions (opened_at);
CREATE INDEX sessions_owner ON sessions (opened_by, opened_at);
CREATE INDEX sessions_open_by_token ON sessions (token_id) WHERE status = 'open';
CREATE INDEX sessions_open_by_grant ON sessions (access_request_id) WHERE status = 'open';

ALTER TABLE audit_events ADD COLUMN request_id TEXT;
CREATE INDEX audit_events_request ON audit_events (request_id);

CREATE TABLE webhooks (
  webhook_id TEXT PRIMARY KEY,
  url        TEXT NOT NULL,
  events     TEXT NOT NULL,
  secret     TEXT NOT NULL,
  format     TEXT NOT NULL CHECK (format IN ('json', 'slack')),
  created_by TEXT NOT NULL,
  created_at TEXT NOT NULL,
  deleted_at TEXT
) STRICT;

CREATE TABLE webhook_deliveries (
  delivery_id      TEXT PRIMARY KEY,
  webhook_id       TEXT NOT NULL REFERENCES webhooks (webhook_id) ON DELETE CASCADE,
  event            TEXT NOT NULL,
  body             TEXT NOT NULL,
  status           TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
  attempts         INTEGER NOT NULL DEFAULT 0,
  next_attempt_at  TEXT,
  last_status_code INTEGER,
  last_error       TEXT,
  created_at       TEXT NOT NULL,
  delivered_at     TEXT,
  claimed_until    TEXT
) STRICT;
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (status, next_attempt_at);
CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries (webhook_id, created_at);
`;
