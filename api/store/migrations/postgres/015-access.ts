/** Migration 15 on PostgreSQL: as SQLite's (sqlite/015-access.ts); sessions and audit_events change in place. */
export default `
CREATE TABLE access_policies (
  policy_id            TEXT COLLATE "C" PRIMARY KEY,
  name                 TEXT COLLATE "C" NOT NULL,
  labels               TEXT COLLATE "C" NOT NULL,
  protocols            TEXT COLLATE "C" NOT NULL,
  max_duration_seconds INTEGER NOT NULL,
  created_by           TEXT COLLATE "C" NOT NULL,
  created_at           TEXT COLLATE "C" NOT NULL,
  deleted_at           TEXT COLLATE "C"
);

CREATE TABLE access_requests (
  request_id       TEXT COLLATE "C" PRIMARY KEY,
  requester        TEXT COLLATE "C" NOT NULL,
  device_id        TEXT COLLATE "C" NOT NULL,
  protocols        TEXT COLLATE "C" NOT NULL,
  reason           TEXT COLLATE "C" NOT NULL,
  duration_seconds INTEGER NOT NULL,
  status           TEXT COLLATE "C" NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'canceled', 'expired', 'revoked', 'ended')),
  created_at       TEXT COLLATE "C" NOT NULL,
  expires_at       TEXT COLLATE "C" NOT NULL,
  reviewed_by      TEXT COLLATE "C",
  review_reason    TEXT COLLATE "C",
  reviewed_at      TEXT COLLATE "C",
  starts_at        TEXT COLLATE "C",
  ends_at          TEXT COLLATE "C",
  revoked_by       TEXT COLLATE "C",
  revoke_reason    TEXT COLLATE "C",
  revoked_at       TEXT COLLATE "C"
);
CREATE INDEX access_requests_requester ON access_requests (requester, created_at);
CREATE INDEX access_requests_device ON access_requests (device_id, status);
CREATE INDEX access_requests_pending ON access_requests (status, expires_at);
CREATE INDEX access_requests_grant_end ON access_requests (status, ends_at);

ALTER TABLE sessions ADD COLUMN access_request_id TEXT COLLATE "C";
ALTER TABLE sessions DROP CONSTRAINT sessions_close_reason_check;
ALTER TABLE sessions ADD CONSTRAINT sessions_close_reason_check
  CHECK (close_reason IN ('closed', 'expired', 'token_expired', 'device_deleted', 'server_shutdown', 'idle', 'access_expired', 'access_revoked'));
CREATE INDEX sessions_open_by_grant ON sessions (access_request_id) WHERE status = 'open';

ALTER TABLE audit_events ADD COLUMN request_id TEXT COLLATE "C";
CREATE INDEX audit_events_request ON audit_events (request_id);

CREATE TABLE webhooks (
  webhook_id TEXT COLLATE "C" PRIMARY KEY,
  url        TEXT COLLATE "C" NOT NULL,
  events     TEXT COLLATE "C" NOT NULL,
  secret     TEXT COLLATE "C" NOT NULL,
  format     TEXT COLLATE "C" NOT NULL CHECK (format IN ('json', 'slack')),
  created_by TEXT COLLATE "C" NOT NULL,
  created_at TEXT COLLATE "C" NOT NULL,
  deleted_at TEXT COLLATE "C"
);

CREATE TABLE webhook_deliveries (
  delivery_id      TEXT COLLATE "C" PRIMARY KEY,
  webhook_id       TEXT COLLATE "C" NOT NULL REFERENCES webhooks (webhook_id) ON DELETE CASCADE,
  event            TEXT COLLATE "C" NOT NULL,
  body             TEXT COLLATE "C" NOT NULL,
  status           TEXT COLLATE "C" NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
  attempts         INTEGER NOT NULL DEFAULT 0,
  next_attempt_at  TEXT COLLATE "C",
  last_status_code INTEGER,
  last_error       TEXT COLLATE "C",
  created_at       TEXT COLLATE "C" NOT NULL,
  delivered_at     TEXT COLLATE "C",
  claimed_until    TEXT COLLATE "C"
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (status, next_attempt_at);
CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries (webhook_id, created_at);
`;
