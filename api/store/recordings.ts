/**
 * @module Session recordings: a row per recorded session, its file named by the recorder
 * (`api/recordings/`), and on PostgreSQL its compressed file in chunks (`recording_chunks`, seq
 * 0..n in order), so that every peer reads it (`api/recordings/chunks.ts`). Deleting a row
 * deletes its chunks (the foreign key cascades).
 */
import { affected, type Executor, type Row } from './schema';

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

/** A row as the database holds it: flags as 0/1 (better-sqlite3 binds no booleans). */
const toRecording = (r: Row<'recordings'>): RecordingRow => ({ ...r, truncated: r.truncated === 1, input: r.input === 1 });

/** What a finished stretch of recording changed. */
export interface RecordingProgress {
  ended_at: string | null;
  duration_s: number;
  bytes: number;
  sha256: string;
  stored_bytes: number;
  truncated: boolean;
}

export function createRecordingRepo(db: Executor) {
  const recordings = () => db.selectFrom('recordings').selectAll();
  return {
    /** A new recording; `truncated` from the start when the store refused it (`api/recordings/store-budget.ts`). */
    async insert(
      row: Pick<RecordingRow, 'session_id' | 'device_id' | 'username' | 'started_at' | 'sha256' | 'input' | 'file'> & { truncated?: boolean },
    ): Promise<void> {
      await db
        .insertInto('recordings')
        .values({
          session_id: row.session_id,
          device_id: row.device_id,
          username: row.username,
          started_at: row.started_at,
          sha256: row.sha256,
          file: row.file,
          input: row.input ? 1 : 0,
          truncated: row.truncated ? 1 : 0,
        })
        .execute();
    },
    /** Compressed bytes of every recording, as their rows last said. */
    async totalStored(): Promise<number> {
      const row = await db
        .selectFrom('recordings')
        .select((eb) => eb.fn.coalesce(eb.fn.sum<number>('stored_bytes'), eb.lit(0)).as('total'))
        .executeTakeFirstOrThrow();
      return Number(row.total);
    },
    async get(sessionId: string): Promise<RecordingRow | undefined> {
      const row = await recordings().where('session_id', '=', sessionId).executeTakeFirst();
      return row && toRecording(row);
    },
    /** Records where a recording stands (ended_at null: a stream is being recorded). */
    async update(sessionId: string, p: RecordingProgress): Promise<void> {
      await db
        .updateTable('recordings')
        .set({
          ended_at: p.ended_at,
          duration_s: p.duration_s,
          bytes: p.bytes,
          sha256: p.sha256,
          stored_bytes: p.stored_bytes,
          truncated: p.truncated ? 1 : 0,
        })
        .where('session_id', '=', sessionId)
        .execute();
    },
    /** A new stream of the session is being recorded. */
    async reopen(sessionId: string): Promise<void> {
      await db.updateTable('recordings').set({ ended_at: null }).where('session_id', '=', sessionId).execute();
    },
    /** Recordings a killed server left unfinished. */
    unfinished: async (): Promise<RecordingRow[]> => (await recordings().where('ended_at', 'is', null).execute()).map(toRecording),
    /** Recordings that ended before `at`, oldest first (retention). */
    endedBefore: async (at: string): Promise<RecordingRow[]> =>
      (await recordings().where('ended_at', 'is not', null).where('ended_at', '<', at).orderBy('ended_at').execute()).map(toRecording),
    delete: async (sessionId: string): Promise<boolean> =>
      affected(await db.deleteFrom('recordings').where('session_id', '=', sessionId).executeTakeFirst()) === 1,

    /** Appends chunk `seq` of a recording's compressed file (its row must exist). */
    async insertChunk(sessionId: string, seq: number, data: Buffer): Promise<void> {
      await db.insertInto('recording_chunks').values({ session_id: sessionId, seq, data }).execute();
    },
    /** Deletes a recording's chunks (before it is copied again). */
    deleteChunks: async (sessionId: string): Promise<number> =>
      affected(await db.deleteFrom('recording_chunks').where('session_id', '=', sessionId).executeTakeFirst()),
    /** How many chunks of a recording the database holds, and their bytes together. */
    async chunkTotals(sessionId: string): Promise<{ chunks: number; bytes: number }> {
      const row = await db
        .selectFrom('recording_chunks')
        .select((eb) => [eb.fn.countAll<number>().as('chunks'), eb.fn.coalesce(eb.fn.sum<number>(eb.fn<number>('length', ['data'])), eb.lit(0)).as('bytes')])
        .where('session_id', '=', sessionId)
        .executeTakeFirstOrThrow();
      return { chunks: Number(row.chunks), bytes: Number(row.bytes) };
    },
    /** Chunk `seq` of a recording, or undefined when there is none. */
    async chunk(sessionId: string, seq: number): Promise<Buffer | undefined> {
      const row = await db.selectFrom('recording_chunks').select('data').where('session_id', '=', sessionId).where('seq', '=', seq).executeTakeFirst();
      return row?.data;
    },
  };
}
export type RecordingRepo = ReturnType<typeof createRecordingRepo>;
