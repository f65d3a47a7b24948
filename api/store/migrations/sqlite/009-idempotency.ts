/**
 * Migration 9: idempotency keys (docs/http-api.md, safe retries). A row per caller and key: the
 * key's SHA-256 (never the key), what the request was (a SHA-256 over method, path, query,
 * tenant, content type and body), and once it has succeeded, the response to replay, sealed
 * (AES-256-GCM under a key derived from the idempotency key: a response may hold a token shown
 * once, and a copy of the database alone must not reveal it). `status` is NULL while the first
 * request is being handled. Rows older than 24 hours are removed.
 */
export default `
CREATE TABLE idempotency_keys (
  caller      TEXT NOT NULL,
  key_hash    TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  created_at  INTEGER NOT NULL,
  status      INTEGER,
  response    BLOB,
  PRIMARY KEY (caller, key_hash)
) STRICT, WITHOUT ROWID;
CREATE INDEX idempotency_keys_created_at ON idempotency_keys (created_at);
`;
