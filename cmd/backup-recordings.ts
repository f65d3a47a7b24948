/**
 * @module The session recordings in a backup (docs/backup.md). On SQLite a recording is a file in
 * `<data dir>/recordings` and a row in the database; a backup copies each file into the backup's
 * own `recording_chunks`, as PostgreSQL peers keep them, so the backup stays one file and a server
 * restored from it plays them from the database (api/recordings/routes.ts reads the chunks when it
 * has no file). What a file holds is checked against its row before the backup keeps it.
 */
import Database from 'better-sqlite3';
import { createHash, randomBytes } from 'node:crypto';
import { copyFile, open, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { CHUNK_BYTES, readAt } from '../api/recordings/chunks';
import { repairCast } from '../api/recordings/repair';

type Db = InstanceType<typeof Database>;

interface Row {
  session_id: string;
  file: string;
  ended_at: string | null;
  bytes: number;
  sha256: string;
  stored_bytes: number;
}

/** What a backup holds of the recordings. */
export interface RecordingsCopied {
  /** Recordings in the backup, each playable from it. */
  recordings: number;
  /** Their compressed bytes together. */
  storedBytes: number;
  /** Recordings left out, and why (a file deleted by the retention meanwhile, or not what its row says). */
  leftOut: Array<{ session_id: string; reason: string }>;
}

const hasTable = (db: Db, name: string) => db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(name) !== undefined;
const hasChunkTable = (db: Db) => hasTable(db, 'recording_chunks');

/**
 * Stores the first `length` bytes of the file at `path` as the chunks of `sessionId` (one read of
 * CHUNK_BYTES at a time, never the whole file in memory) and resolves to the cast they decompress to.
 */
async function storeChunks(db: Db, sessionId: string, path: string, length: number): Promise<{ bytes: number; sha256: string }> {
  const insert = db.prepare('INSERT INTO recording_chunks (session_id, seq, data) VALUES (?, ?, ?)');
  const hash = createHash('sha256');
  let bytes = 0;
  const file = await open(path, 'r');
  try {
    async function* chunks() {
      for (let at = 0, seq = 0; at < length; seq++) {
        const data = await readAt(file, at, Math.min(CHUNK_BYTES, length - at));
        insert.run(sessionId, seq, data);
        at += data.length;
        yield data;
      }
    }
    const sink = new Writable({
      write(data: Buffer, _encoding, done) {
        hash.update(data);
        bytes += data.length;
        done();
      },
    });
    await pipeline(Readable.from(chunks()), createGunzip(), sink);
  } finally {
    await file.close();
  }
  return { bytes, sha256: hash.digest('hex') };
}

/** Copies one finished recording's file into the backup, checked against its row. */
async function copyFinished(db: Db, row: Row, path: string): Promise<void> {
  if (row.stored_bytes === 0) return;
  const cast = await storeChunks(db, row.session_id, path, row.stored_bytes);
  if (cast.bytes !== row.bytes || cast.sha256 !== row.sha256) {
    throw new Error(`its file holds a cast of ${cast.bytes} bytes (sha256 ${cast.sha256}), its row says ${row.bytes} (${row.sha256})`);
  }
}

/**
 * Copies a recording still being written into the backup: its file as it is now, its complete
 * lines only (as a restart would repair it), and makes the backup's row say what that holds and
 * that it ended when the backup was made.
 */
async function copyUnfinished(db: Db, row: Row, path: string, scratch: string, endedAt: string): Promise<number> {
  await copyFile(path, scratch);
  try {
    const repaired = await repairCast(scratch);
    const cast = repaired.stored_bytes === 0 ? undefined : await storeChunks(db, row.session_id, scratch, repaired.stored_bytes);
    if (cast && (cast.bytes !== repaired.bytes || cast.sha256 !== repaired.sha256)) throw new Error('its file changed while it was copied');
    db.prepare('UPDATE recordings SET ended_at = ?, duration_s = ?, bytes = ?, sha256 = ?, stored_bytes = ? WHERE session_id = ?').run(
      endedAt,
      repaired.duration_s,
      repaired.bytes,
      repaired.sha256,
      repaired.stored_bytes,
      row.session_id,
    );
    return repaired.stored_bytes;
  } finally {
    await rm(scratch, { force: true });
  }
}

/**
 * Puts every recording of the database copy `copy` (a backup being made) into it, from the files
 * in `dir`; a recording whose file is gone or does not hold what its row says is left out (its row
 * deleted from the copy) and named in the result. Recordings the database holds already (a server
 * restored from such a backup plays them from there) stay as they are.
 */
export async function addRecordings(copy: string, dir: string, now: () => number): Promise<RecordingsCopied> {
  const db = new Database(copy, { fileMustExist: true });
  const result: RecordingsCopied = { recordings: 0, storedBytes: 0, leftOut: [] };
  const scratch = join(dirname(copy), `.${basename(copy)}.${randomBytes(6).toString('hex')}.cast.gz`);
  try {
    if (!hasChunkTable(db)) return result; // a database older than chunks: the server migrates it at its start
    const rows = db.prepare('SELECT session_id, file, ended_at, bytes, sha256, stored_bytes FROM recordings ORDER BY session_id').all() as Row[];
    const held = db.prepare('SELECT count(*) AS chunks, coalesce(sum(length(data)), 0) AS bytes FROM recording_chunks WHERE session_id = ?');
    for (const row of rows) {
      const inDb = held.get(row.session_id) as { chunks: number; bytes: number };
      if (row.ended_at !== null && inDb.chunks > 0 && inDb.bytes === row.stored_bytes) {
        result.recordings++;
        result.storedBytes += row.stored_bytes;
        continue;
      }
      // Each recording in a transaction of its own: one that fails leaves the others in.
      db.exec('BEGIN');
      try {
        db.prepare('DELETE FROM recording_chunks WHERE session_id = ?').run(row.session_id);
        const path = join(dir, row.file);
        let stored = row.stored_bytes;
        if (row.ended_at === null) stored = await copyUnfinished(db, row, path, scratch, new Date(now()).toISOString());
        else await copyFinished(db, row, path);
        db.exec('COMMIT');
        result.recordings++;
        result.storedBytes += stored;
      } catch (err) {
        db.exec('ROLLBACK');
        const reason = (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'its file is gone (deleted by the retention?)' : (err as Error).message;
        db.prepare('DELETE FROM recording_chunks WHERE session_id = ?').run(row.session_id);
        db.prepare('DELETE FROM recordings WHERE session_id = ?').run(row.session_id);
        result.leftOut.push({ session_id: row.session_id, reason });
      }
    }
    return result;
  } finally {
    db.close();
    await rm(scratch, { force: true });
  }
}

/**
 * After a restore: the recordings of the restored database that it does not hold (a backup made
 * by a tether that left them out) and whose file is in `kept` (the recordings directory the
 * restore set aside) are moved back into `dir`. Resolves to how many it holds, how many were moved
 * back, and how many are nowhere.
 */
export async function settleRestoredRecordings(
  database: string,
  dir: string,
  kept: string | undefined,
  moveBack: (from: string, to: string) => boolean,
): Promise<{ held: number; movedBack: number; missing: number }> {
  const db = new Database(database, { readonly: true, fileMustExist: true });
  try {
    if (!hasTable(db, 'recordings')) return { held: 0, movedBack: 0, missing: 0 }; // older than recordings
    const chunks = hasChunkTable(db);
    const rows = db
      .prepare(
        chunks
          ? 'SELECT r.file, r.stored_bytes, (SELECT count(*) FROM recording_chunks c WHERE c.session_id = r.session_id) AS chunks FROM recordings r'
          : 'SELECT file, stored_bytes, 0 AS chunks FROM recordings',
      )
      .all() as Array<{ file: string; stored_bytes: number; chunks: number }>;
    const counts = { held: 0, movedBack: 0, missing: 0 };
    for (const row of rows) {
      if (row.chunks > 0 || row.stored_bytes === 0) counts.held++;
      else if (kept !== undefined && moveBack(join(kept, row.file), join(dir, row.file))) counts.movedBack++;
      else counts.missing++;
    }
    return counts;
  } finally {
    db.close();
  }
}
