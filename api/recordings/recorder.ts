/**
 * @module Session recordings (docs/http-api.md, recordings): the recorder the relay's streams
 * report to (`shared/relay/recording.ts`), one `SessionRecording` per recorded session, a row per
 * recording, the repair at start-up of recordings a killed server left unfinished (`repair.ts`),
 * and the retention that deletes old ones (`retention.ts`). The store as a whole is bounded
 * (`store-budget.ts`): a recording it has no room for is kept as an empty, truncated one.
 */
import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Logger } from '../../shared/log';
import type { Metrics } from '../../shared/metrics';
import type { StreamRecorder, StreamRecording } from '../../shared/relay/recording';
import type { StreamGrant } from '../../shared/protocol/session-stream';
import type { Store } from '../store/index';
import type { RecordingRow } from '../store/recordings';
import { repairCast } from './repair';
import { createRetention } from './retention';
import { SessionRecording, type LiveRecording } from './session-recording';
import { createStoreBudget } from './store-budget';

export interface RecorderSettings {
  /** Where the files go (`<data dir>/recordings`). */
  dir: string;
  recordShell: boolean;
  recordInput: boolean;
  /** The largest compressed file of one session. */
  maxStoredBytes: number;
  /** Recordings older than this many days are deleted; 0 keeps them forever. */
  retentionDays: number;
  /** The compressed size of every stored recording together (`TETHER_RECORDINGS_MAX_TOTAL_BYTES`); absent: no bound. */
  maxTotalBytes?: number | undefined;
  /** Free space the data dir's filesystem keeps (`TETHER_RECORDINGS_MIN_FREE_BYTES`); absent or 0: no floor. */
  minFreeBytes?: number | undefined;
}

const EMPTY_SHA256 = createHash('sha256').digest('hex');

export function createRecorder(store: Store, settings: RecorderSettings, log: Logger, now: () => number, metrics?: Metrics) {
  const active = new Map<string, SessionRecording>();
  const budget = createStoreBudget({
    maxTotalBytes: settings.maxTotalBytes ?? Number.POSITIVE_INFINITY,
    minFreeBytes: settings.minFreeBytes ?? 0,
    dirs: [dirname(settings.dir), settings.dir],
    log,
    refused: metrics?.counter(
      'tether_recordings_refused_total',
      'Shell recordings refused (stored empty, truncated) or stopped early (truncated) because the recordings store was full, by reason: total_cap (TETHER_RECORDINGS_MAX_TOTAL_BYTES) or free_space (TETHER_RECORDINGS_MIN_FREE_BYTES).',
    ),
  });
  budget.reset(store.recordings.totalStored());
  metrics?.gauge('tether_recordings_stored_bytes', 'Compressed bytes of every stored shell recording together.', () => budget.used);
  const closing = new Set<Promise<void>>();
  const closingIds = new Set<string>();
  const fileOf = (row: Pick<RecordingRow, 'file'>) => join(settings.dir, row.file);
  const retention = createRetention({ store, retentionDays: settings.retentionDays, fileOf, budget, log, now });

  function track(work: Promise<void>): void {
    closing.add(work);
    void work.finally(() => closing.delete(work));
  }

  const port: StreamRecorder = {
    start(grant: StreamGrant): StreamRecording | undefined {
      if (grant.protocol !== 'shell' || !settings.recordShell) return undefined;
      let recording = active.get(grant.sessionId);
      if (!recording) {
        const session = store.sessions.get(grant.sessionId);
        // A session recorded before, but no longer in memory, belongs to an earlier run: it was
        // closed at start-up and admits no stream. Never append to a file whose hash is not known.
        if (!session || store.recordings.get(grant.sessionId)) return undefined;
        mkdirSync(settings.dir, { recursive: true, mode: 0o700 });
        // No room: the recording is kept, empty and truncated, saying why, and the session goes on.
        const refusal = budget.admit();
        const startedAt = now();
        const row = {
          session_id: session.session_id,
          device_id: session.device_id,
          username: session.opened_by,
          started_at: new Date(startedAt).toISOString(),
          sha256: EMPTY_SHA256,
          input: settings.recordInput,
          file: `${session.session_id}.cast.gz`,
          truncated: refusal !== undefined,
        };
        store.recordings.insert(row);
        recording = new SessionRecording({
          sessionId: session.session_id,
          deviceId: session.device_id,
          username: session.opened_by,
          path: fileOf(row),
          startedAt,
          recordInput: settings.recordInput,
          maxStoredBytes: settings.maxStoredBytes,
          budget,
          refusal: refusal?.why,
          log,
          now,
          onProgress: (progress) => {
            try {
              store.recordings.update(session.session_id, progress);
            } catch (err) {
              // The database closed under a late write (shutdown): the next start repairs the row.
              log.warn('could not record where a recording stands', { session_id: session.session_id, err: (err as Error).message });
            }
          },
        });
        active.set(grant.sessionId, recording);
        if (refusal) log.info('not recording a shell session: the recordings store is full', { session_id: session.session_id, why: refusal.why });
        else log.info('recording a shell session', { session_id: session.session_id, input: settings.recordInput });
      } else {
        store.recordings.reopen(grant.sessionId);
      }
      return recording.streamStarted();
    },
  };

  /** Repairs one recording a killed server left: its complete lines kept, the rest dropped, the row made true. */
  async function repair(row: RecordingRow): Promise<void> {
    const repaired = await repairCast(fileOf(row));
    budget.reset(budget.used - row.stored_bytes + repaired.stored_bytes);
    store.recordings.update(row.session_id, {
      ended_at: new Date(now()).toISOString(),
      duration_s: repaired.duration_s,
      bytes: repaired.bytes,
      sha256: repaired.sha256,
      stored_bytes: repaired.stored_bytes,
      truncated: row.truncated,
    });
  }

  return {
    port,

    /** Where a session's recording stands while it is in memory (being recorded, or not yet closed). */
    live: (sessionId: string): LiveRecording | undefined => active.get(sessionId)?.live(),

    /** How many compressed bytes of a recording may be read: all of a finished one, the complete batches of one in progress. */
    readableBytes: (row: RecordingRow): number => active.get(row.session_id)?.storedBytes ?? row.stored_bytes,

    fileOf,

    /** The session closed: its recording is finished and let go. */
    sessionClosed(sessionId: string): void {
      const recording = active.get(sessionId);
      if (!recording || closingIds.has(sessionId)) return;
      closingIds.add(sessionId);
      // In memory until its row is final: the record and the reads go by it meanwhile.
      track(
        recording.close().finally(() => {
          active.delete(sessionId);
          closingIds.delete(sessionId);
        }),
      );
    },

    /** At start-up: repairs what a killed server left, applies the retention, and arms it. */
    async start(): Promise<void> {
      for (const row of store.recordings.unfinished()) {
        try {
          await repair(row);
          log.info('repaired a recording the last run left unfinished', { session_id: row.session_id });
        } catch (err) {
          log.error('could not repair a recording', { session_id: row.session_id, err: (err as Error).message });
        }
      }
      await retention.purge();
      retention.arm();
    },

    /** Deletes the recordings older than the retention: the file, then the row. */
    purge: retention.purge,

    /** Finishes every recording (their sessions closed at shutdown) before the database closes. */
    async stop(): Promise<void> {
      retention.disarm();
      for (const id of [...active.keys()]) this.sessionClosed(id);
      await Promise.allSettled([...closing]);
    },
  };
}
export type Recorder = ReturnType<typeof createRecorder>;
