/**
 * @module On PostgreSQL, the database is where recordings live (CONTRACT 10.1): each time a
 * recording's streams have all ended, and when its session closes, its file is copied into the
 * database (`chunks.ts`); once the session's copy holds the whole file, the file is deleted. Until
 * then the peer recording it serves it from the file, as on SQLite. A copy that failed leaves the
 * file where it is, served by this peer, and copied again at its next start (`leftovers`), as are
 * the files a killed peer left.
 */
import { readdir, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../../shared/log';
import type { Store } from '../store/index';
import type { RecordingRow } from '../store/recordings';
import { copyToDatabase, type Finished } from './chunks';

const SUFFIX = '.cast.gz';

export interface DatabaseCopiesDeps {
  store: Store;
  /** The recordings directory. */
  dir: string;
  /** True while the recording of a session is in memory (starting, recorded or closing): its file is not the start-up's. */
  busy(sessionId: string): boolean;
  /** Repairs a file a killed server left (its complete batches only) and makes its row say so; resolves to the row. */
  repair(row: RecordingRow): Promise<RecordingRow>;
  log: Logger;
}

type Named = Pick<RecordingRow, 'session_id' | 'file'>;

export function createDatabaseCopies({ store, dir, busy, repair, log }: DatabaseCopiesDeps) {
  const fileOf = (row: Pick<RecordingRow, 'file'>) => join(dir, row.file);
  /** The compressed bytes the database holds of each recording in memory, as of its last copy. */
  const copied = new Map<string, number>();

  /** Copies what `finished` says of the file into the database; false (logged) when it could not. */
  async function copy(row: Named, finished: Finished): Promise<boolean> {
    try {
      const chunks = await copyToDatabase(store, row.session_id, fileOf(row), finished);
      log.debug('copied a recording into the database', { session_id: row.session_id, stored_bytes: finished.stored_bytes, chunks });
      return true;
    } catch (err) {
      log.error('could not copy a recording into the database; this server keeps its file, serves it, and copies it again at its next start', {
        session_id: row.session_id,
        err: (err as Error).message,
      });
      return false;
    }
  }

  async function removeFile(row: Named): Promise<void> {
    await unlink(fileOf(row)).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') log.warn('could not delete a recording file the database holds', { session_id: row.session_id, err: err.message });
    });
  }

  /** A recording not in memory: copied unless the database holds it already (`again`: copied whatever it holds), then its file deleted. */
  async function settle(row: RecordingRow, again: boolean): Promise<void> {
    const held = again ? undefined : await store.recordings.chunkTotals(row.session_id);
    if (held?.bytes !== row.stored_bytes && !(await copy(row, row))) return;
    await removeFile(row);
  }

  return {
    /** A stretch of a recording in memory ended (every stream, or the session): the database holds it from now on. */
    async stretchEnded(row: Named, finished: Finished): Promise<void> {
      if (copied.get(row.session_id) === finished.stored_bytes) return; // a file only grows: the same size is the same bytes
      if (await copy(row, finished)) copied.set(row.session_id, finished.stored_bytes);
    },

    /** The recording is let go (`storedBytes` its final size): its file goes once the database holds all of it. */
    async letGo(row: Named, storedBytes: number): Promise<void> {
      if (copied.get(row.session_id) === storedBytes) await removeFile(row);
      copied.delete(row.session_id);
    },

    /** A recording the last run left unfinished, repaired: the database holds its repaired file (rewritten whole) instead. */
    repaired: (row: RecordingRow): Promise<void> => settle(row, true),

    /**
     * At start-up, after the repair: the files here of finished recordings not in memory (a copy
     * failed, or the server was killed before it copied or deleted them) are copied unless the
     * database holds them, and deleted. A file holding more than its row says (killed as its
     * session's next stream began) is repaired first. A file without a row is left alone: this
     * database may not be the one this data dir was recorded into.
     */
    async leftovers(): Promise<void> {
      const names = await readdir(dir).catch(() => [] as string[]);
      for (const name of names.filter((n) => n.endsWith(SUFFIX))) {
        const sessionId = name.slice(0, -SUFFIX.length);
        try {
          if (busy(sessionId)) continue;
          const row = await store.recordings.get(sessionId);
          if (!row || row.ended_at === null || row.file !== name) continue;
          const size = (await stat(fileOf(row))).size;
          if (size !== row.stored_bytes) await settle(await repair(row), true);
          else await settle(row, false);
        } catch (err) {
          log.error('could not settle a recording file the last run left', { session_id: sessionId, err: (err as Error).message });
        }
      }
    },
  };
}
export type DatabaseCopies = ReturnType<typeof createDatabaseCopies>;
