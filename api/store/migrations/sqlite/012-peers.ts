/**
 * Migration 12: several control nodes on PostgreSQL (CONTRACT 10.1), the same schema on SQLite.
 * - A device's presence carries a generation, bumped by every connect of its agent, and the node
 *   that holds the agent (its run id and public URL): a disconnect clears the presence only if no
 *   newer connect happened since (on any node), and a session's stream URL names that node.
 * - Rate limits are counted in the database: a row per request of a limited group, by bucket
 *   (group and user), so that every peer counts the same requests.
 * - Recordings are kept in the database too, in chunks, so that every peer can play them.
 * - The peers that are running: each says it is alive every few seconds.
 */
export default `
ALTER TABLE devices ADD COLUMN presence_generation INTEGER NOT NULL DEFAULT 0;
ALTER TABLE devices ADD COLUMN presence_node TEXT;
ALTER TABLE devices ADD COLUMN presence_url TEXT;
CREATE TABLE rate_limit_hits (
  id     INTEGER PRIMARY KEY AUTOINCREMENT,
  bucket TEXT NOT NULL,
  at     INTEGER NOT NULL
) STRICT;
CREATE INDEX rate_limit_hits_bucket ON rate_limit_hits (bucket, at);
CREATE INDEX rate_limit_hits_at ON rate_limit_hits (at);
CREATE TABLE recording_chunks (
  session_id TEXT NOT NULL REFERENCES recordings (session_id) ON DELETE CASCADE,
  seq        INTEGER NOT NULL,
  data       BLOB NOT NULL,
  PRIMARY KEY (session_id, seq)
) STRICT;
CREATE TABLE peers (
  node       TEXT PRIMARY KEY,
  url        TEXT NOT NULL,
  started_at TEXT NOT NULL,
  seen_at    INTEGER NOT NULL
) STRICT;
`;
