/**
 * Migration 9: idempotency keys (docs/http-api.md, safe retries). A row per caller and key:
 * what the request was (a SHA-256 over method, path, query, tenant, content type and body), and
 * once it has succeeded, the response to replay (status, the headers that matter, the body).
 * `status` is NULL while the first request is being handled. Rows older than 24 hours are
 * removed.
 */
export default `
CREATE TABLE idempotency_keys (
  caller      TEXT NOT NULL,
  key         TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  created_at  INTEGER NOT NULL,
  status      INTEGER,
  headers     TEXT,
  body        TEXT,
  PRIMARY KEY (caller, key)
) STRICT, WITHOUT ROWID;
CREATE INDEX idempotency_keys_created_at ON idempotency_keys (created_at);
`;
