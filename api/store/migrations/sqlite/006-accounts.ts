/**
 * Migration 6: account administration (docs/http-api.md, users and tokens).
 * - Users can be disabled (suspended: their tokens are refused while it lasts) and deleted. A
 *   deleted user stays as a row with `deleted_at`, so its name stays taken: sessions and audit
 *   name users as plain text, and a new account of the same name must not inherit them.
 * - There is always an enabled administrator: triggers refuse the update or delete that would
 *   leave none (the API maps the error to 409), so no order of requests can get around it.
 * - Token listings run newest first, per user or over everyone.
 */
export default `
ALTER TABLE users ADD COLUMN disabled INTEGER NOT NULL DEFAULT 0 CHECK (disabled IN (0, 1));
ALTER TABLE users ADD COLUMN deleted_at TEXT;

CREATE TRIGGER users_keep_an_administrator_on_update
BEFORE UPDATE OF role, disabled, deleted_at ON users
WHEN OLD.role = 'administrator' AND OLD.disabled = 0 AND OLD.deleted_at IS NULL
 AND NOT (NEW.role IS 'administrator' AND NEW.disabled = 0 AND NEW.deleted_at IS NULL)
 AND NOT EXISTS (SELECT 1 FROM users WHERE role = 'administrator' AND disabled = 0 AND deleted_at IS NULL
                                       AND username <> OLD.username)
BEGIN
  SELECT RAISE(ABORT, 'last enabled administrator');
END;

CREATE TRIGGER users_keep_an_administrator_on_delete
BEFORE DELETE ON users
WHEN OLD.role = 'administrator' AND OLD.disabled = 0 AND OLD.deleted_at IS NULL
 AND NOT EXISTS (SELECT 1 FROM users WHERE role = 'administrator' AND disabled = 0 AND deleted_at IS NULL
                                       AND username <> OLD.username)
BEGIN
  SELECT RAISE(ABORT, 'last enabled administrator');
END;

CREATE INDEX tokens_user_created ON tokens (username, created_at);
CREATE INDEX tokens_created ON tokens (created_at);
`;
