/**
 * Migration 13: the audit log of everything that changes who can do what (logins, users, tokens,
 * devices; docs/http-api.md, audit log), beside the remote-access audit (`audit_events`).
 * - One row per event; `count` and `last_at` fold repeated failed logins of one username from one
 *   address within a minute into one row, so a flood of them cannot fill the database.
 * - Tokens of users that are disabled or deleted are revoked: from now on disabling revokes them,
 *   and enabling again must not bring back the ones an earlier version only suspended.
 */
export default `
CREATE TABLE audit_log (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  event       TEXT NOT NULL,
  actor       TEXT NOT NULL,
  target_kind TEXT NOT NULL,
  target_id   TEXT NOT NULL,
  details     TEXT NOT NULL DEFAULT '{}',
  outcome     TEXT NOT NULL CHECK (outcome IN ('success', 'failure')),
  at          TEXT NOT NULL,
  trace_id    TEXT NOT NULL,
  source_ip   TEXT,
  count       INTEGER NOT NULL DEFAULT 1,
  last_at     TEXT
) STRICT;
CREATE INDEX audit_log_event ON audit_log (event, at);
CREATE INDEX audit_log_actor ON audit_log (actor, id);
CREATE INDEX audit_log_target ON audit_log (target_id, id);
CREATE INDEX audit_log_at ON audit_log (at);
UPDATE tokens SET revoked_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
 WHERE revoked_at IS NULL
   AND username IN (SELECT username FROM users WHERE disabled = 1 OR deleted_at IS NOT NULL);
`;
