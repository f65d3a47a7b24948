/**
 * @module The recordings store's bounds as a whole, beside each recording's own cap: a total for
 * every stored recording (`TETHER_RECORDINGS_MAX_TOTAL_BYTES`) and a floor of free space on the
 * filesystems of the data dir and the recordings (`TETHER_RECORDINGS_MIN_FREE_BYTES`), so that
 * recordings never fill the disk the database writes to. Nothing is deleted to make room: only the
 * retention deletes recordings, since auditors were promised them for that long. A recording
 * that would pass a bound is refused (it is stored empty, `truncated`, saying why) or stopped
 * there (`truncated`); a warning is logged once each time the store fills, and every refusal
 * is counted in `tether_recordings_refused_total`.
 */
import { statfsSync } from 'node:fs';
import type { Logger } from '../../shared/log';
import type { Counter } from '../../shared/metrics';

export type RefusalReason = 'total_cap' | 'free_space';

export interface Refusal {
  reason: RefusalReason;
  /** What a log line, the recording's note and an operator read. */
  why: string;
}

export interface StoreBudgetOptions {
  maxTotalBytes: number;
  minFreeBytes: number;
  /** The directories whose filesystems must keep `minFreeBytes` free (the data dir, the recordings). */
  dirs: readonly string[];
  log: Logger;
  refused?: Counter | undefined;
  /** Free bytes of a directory's filesystem (tests replace it). */
  freeBytes?: (dir: string) => number | undefined;
}

/** Free space is looked at again after this many bytes written, as well as before each recording. */
const FREE_CHECK_EVERY_BYTES = 8 * 1024 * 1024;
/** Room a new recording needs to start: one batch of output (a recording's members are at most 64 KiB of text). */
const ROOM_TO_START = 64 * 1024;

function statfsFree(dir: string): number | undefined {
  try {
    const s = statfsSync(dir);
    return s.bavail * s.bsize;
  } catch {
    return undefined; // not there yet, or a filesystem that cannot say: no floor to check
  }
}

export function createStoreBudget(o: StoreBudgetOptions) {
  const freeBytes = o.freeBytes ?? statfsFree;
  let used = 0;
  let sinceFreeCheck = 0;
  /** Set while the store is full: the warning went out once. */
  let full: RefusalReason | undefined;

  function freeSpaceRefusal(): Refusal | undefined {
    if (o.minFreeBytes <= 0) return undefined;
    for (const dir of o.dirs) {
      const free = freeBytes(dir);
      if (free !== undefined && free < o.minFreeBytes) {
        return { reason: 'free_space', why: `${dir} has ${free} bytes free, less than TETHER_RECORDINGS_MIN_FREE_BYTES (${o.minFreeBytes})` };
      }
    }
    return undefined;
  }

  function totalRefusal(more: number): Refusal | undefined {
    if (used + more <= o.maxTotalBytes) return undefined;
    return { reason: 'total_cap', why: `stored recordings reached TETHER_RECORDINGS_MAX_TOTAL_BYTES (${o.maxTotalBytes} bytes)` };
  }

  /** Logs once when the store fills, and once when it has room again. */
  function note(refusal: Refusal | undefined): Refusal | undefined {
    if (refusal && full === undefined) {
      o.log.warn('the recordings store is full: new recordings are stored empty and marked truncated until there is room', {
        reason: refusal.reason,
        why: refusal.why,
        stored_bytes: used,
      });
    } else if (!refusal && full !== undefined) {
      o.log.info('the recordings store has room again', { stored_bytes: used });
    }
    full = refusal?.reason;
    return refusal;
  }

  return {
    /** Why a new recording may not start now (counted as refused), or undefined. */
    admit(): Refusal | undefined {
      sinceFreeCheck = 0;
      const refusal = note(totalRefusal(ROOM_TO_START) ?? freeSpaceRefusal());
      if (refusal) o.refused?.inc({ reason: refusal.reason });
      return refusal;
    },

    /**
     * Takes `bytes` of the store for a write: undefined when they fit, else why not (the
     * recording stops there, counted as refused). `force` takes them anyway (a refusal's note).
     */
    claim(bytes: number, force = false): Refusal | undefined {
      if (!force) {
        sinceFreeCheck += bytes;
        let refusal = totalRefusal(bytes);
        if (!refusal && sinceFreeCheck >= FREE_CHECK_EVERY_BYTES) {
          sinceFreeCheck = 0;
          refusal = freeSpaceRefusal();
        }
        if (refusal) {
          note(refusal);
          o.refused?.inc({ reason: refusal.reason });
          return refusal;
        }
      }
      used += bytes;
      return undefined;
    },

    /** Gives back bytes: a write that failed, a recording deleted or repaired smaller. */
    release(bytes: number): void {
      used = Math.max(0, used - bytes);
    },

    /** Sets what the store holds (at start-up, from the database). */
    reset(total: number): void {
      used = total;
    },

    /** Compressed bytes of every stored recording. */
    get used(): number {
      return used;
    },
  };
}
export type StoreBudget = ReturnType<typeof createStoreBudget>;
