/** @module Session recordings: a row per recorded session, its file named by the recorder (`api/recordings/`). */
import type { Db } from './db';

export interface RecordingRow {
  session_id: string;
  device_id: string;
  username: string;
  started_at: string;
  /** null while a stream is being recorded (or after a crash, until the next start repairs it). */
  ended_at: string | null;
  duration_s: number;
  /** Size and SHA-256 of the asciicast text. */
  bytes: number;
  sha256: string;
  /** Size of the compressed file. */
  stored_bytes: number;
  truncated: boolean;
  /** Whether keystrokes were recorded (`TETHER_RECORD_INPUT`). */
  input: boolean;
  /** The file's name in the recordings directory. */
  file: string;
}

type StoredRecording = Omit<RecordingRow, 'truncated' | 'input'> & { truncated: number; input: number };

const toRecording = (r: StoredRecording): RecordingRow => ({ ...r, truncated: r.truncated === 1, input: r.input === 1 });

/** What a finished stretch of recording changed. */
export interface RecordingProgress {
  ended_at: string | null;
  duration_s: number;
  bytes: number;
  sha256: string;
  stored_bytes: number;
  truncated: boolean;
}

export function createRecordingRepo(db: Db) {
  const insert = db.prepare(
    `INSERT INTO recordings (session_id, device_id, username, started_at, sha256, input, file, truncated)
     VALUES (@session_id, @device_id, @username, @started_at, @sha256, @input, @file, @truncated)`,
  );
  const total = db.prepare<[], { total: number }>('SELECT COALESCE(SUM(stored_bytes), 0) AS total FROM recordings');
  const byId = db.prepare<[string], StoredRecording>('SELECT * FROM recordings WHERE session_id = ?');
  const update = db.prepare(
    `UPDATE recordings SET ended_at = @ended_at, duration_s = @duration_s, bytes = @bytes, sha256 = @sha256,
                           stored_bytes = @stored_bytes, truncated = @truncated WHERE session_id = @session_id`,
  );
  const reopen = db.prepare<[string]>('UPDATE recordings SET ended_at = NULL WHERE session_id = ?');
  const unfinished = db.prepare<[], StoredRecording>('SELECT * FROM recordings WHERE ended_at IS NULL');
  const endedBefore = db.prepare<[string], StoredRecording>('SELECT * FROM recordings WHERE ended_at IS NOT NULL AND ended_at < ? ORDER BY ended_at');
  const remove = db.prepare<[string]>('DELETE FROM recordings WHERE session_id = ?');

  return {
    /** A new recording; `truncated` from the start when the store refused it (`api/recordings/store-budget.ts`). */
    insert(row: Pick<RecordingRow, 'session_id' | 'device_id' | 'username' | 'started_at' | 'sha256' | 'input' | 'file'> & { truncated?: boolean }): void {
      insert.run({ ...row, input: row.input ? 1 : 0, truncated: row.truncated ? 1 : 0 });
    },
    /** Compressed bytes of every recording, as their rows last said. */
    totalStored: (): number => total.get()!.total,
    get: (sessionId: string): RecordingRow | undefined => {
      const row = byId.get(sessionId);
      return row && toRecording(row);
    },
    /** Records where a recording stands (ended_at null: a stream is being recorded). */
    update(sessionId: string, p: RecordingProgress): void {
      update.run({ ...p, truncated: p.truncated ? 1 : 0, session_id: sessionId });
    },
    /** A new stream of the session is being recorded. */
    reopen: (sessionId: string): void => void reopen.run(sessionId),
    /** Recordings a killed server left unfinished. */
    unfinished: (): RecordingRow[] => unfinished.all().map(toRecording),
    /** Recordings that ended before `at`, oldest first (retention). */
    endedBefore: (at: string): RecordingRow[] => endedBefore.all(at).map(toRecording),
    delete: (sessionId: string): boolean => remove.run(sessionId).changes === 1,
  };
}
export type RecordingRepo = ReturnType<typeof createRecordingRepo>;
