/**
 * Migration 8: session recordings (docs/http-api.md, recordings). A row per recorded session:
 * who and what, when it started and ended (NULL while a stream is being recorded, or when the
 * server was killed during one: the next start repairs those from their files), the cast's size
 * and SHA-256 (of the asciicast text), the compressed file's size and name, whether the recording
 * was cut short (`truncated`) and whether it holds keystrokes (`input`).
 */
export default `
CREATE TABLE recordings (
  session_id   TEXT PRIMARY KEY,
  device_id    TEXT NOT NULL,
  username     TEXT NOT NULL,
  started_at   TEXT NOT NULL,
  ended_at     TEXT,
  duration_s   REAL NOT NULL DEFAULT 0,
  bytes        INTEGER NOT NULL DEFAULT 0,
  stored_bytes INTEGER NOT NULL DEFAULT 0,
  sha256       TEXT NOT NULL,
  truncated    INTEGER NOT NULL DEFAULT 0 CHECK (truncated IN (0, 1)),
  input        INTEGER NOT NULL DEFAULT 0 CHECK (input IN (0, 1)),
  file         TEXT NOT NULL
) STRICT;
CREATE INDEX recordings_ended_at ON recordings (ended_at);
`;
