/**
 * @module The retention of recordings: those that ended more than `retentionDays` ago are
 * deleted, the file first (if this server has it), then the row with its chunks in the database
 * (the foreign key cascades), so a row never names a file that is gone while the row stays, and a
 * failed delete is tried again on the next pass (hourly). Peers may each delete the same old
 * recording: one deletes the row. 0 days keeps them forever.
 */
import { unlink } from 'node:fs/promises';
import type { Logger } from '../../shared/log';
import type { Store } from '../store/index';
import type { RecordingRow } from '../store/recordings';
import type { StoreBudget } from './store-budget';

const RETENTION_EVERY_MS = 60 * 60 * 1000;
const DAY_MS = 24 * 60 * 60 * 1000;

export interface RetentionDeps {
  store: Store;
  /** Recordings older than this many days are deleted; 0 keeps them forever. */
  retentionDays: number;
  /** Where a recording's file is. */
  fileOf(row: Pick<RecordingRow, 'file'>): string;
  /** Given back what each deleted recording took. */
  budget: StoreBudget;
  log: Logger;
  now: () => number;
  /** Whether this process does the housekeeping (peers: one at a time, docs/peers.md); absent: always. */
  leads?: (() => boolean) | undefined;
}

export function createRetention({ store, retentionDays, fileOf, budget, log, now, leads = () => true }: RetentionDeps) {
  let timer: NodeJS.Timeout | undefined;

  /** Deletes the recordings older than the retention: the file, then the row (and its chunks). */
  async function purge(): Promise<number> {
    if (retentionDays <= 0) return 0;
    const cutoff = new Date(now() - retentionDays * DAY_MS).toISOString();
    let deleted = 0;
    for (const row of await store.recordings.endedBefore(cutoff)) {
      try {
        await unlink(fileOf(row));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') {
          log.warn('could not delete an old recording; trying again later', { session_id: row.session_id, err: (err as Error).message });
          continue;
        }
      }
      if (!(await store.recordings.delete(row.session_id))) continue; // a peer deleted it first
      budget.release(row.stored_bytes);
      deleted++;
    }
    if (deleted > 0) log.info('deleted old recordings', { deleted, retention_days: retentionDays });
    return deleted;
  }

  return {
    purge,

    /** Applies the retention every hour from now on, while this process does the housekeeping. */
    arm(): void {
      const run = () => leads() && void purge().catch((err: Error) => log.error('retention failed', { err: err.message }));
      timer = setInterval(run, RETENTION_EVERY_MS);
      timer.unref();
    },

    disarm(): void {
      clearInterval(timer);
    },
  };
}
