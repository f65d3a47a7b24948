/**
 * @module Session recordings (docs/http-api.md, recordings): the recorder the relay's streams
 * report to (`shared/relay/recording.ts`), one `SessionRecording` per recorded session, a row per
 * recording, the repair at start-up of recordings a killed server left unfinished (`repair.ts`),
 * and the retention that deletes old ones (`retention.ts`). The store as a whole is bounded
 * (`store-budget.ts`): a recording it has no room for is kept as an empty, truncated one. A
 * recording starts once its row is written; what its first stream passes meanwhile waits for it
 * (`deferred-recording.ts`). On PostgreSQL a finished recording lives in the database, where every
 * peer reads it (`database-copies.ts`); the file is the recording peer's while it is written.
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
import { createDatabaseCopies } from './database-copies';
import { deferredRecording } from './deferred-recording';
import { repairUnfinished, rowRepair } from './repair';
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
  /** Whether this process does the housekeeping, the retention among it (peers, docs/peers.md); absent: always. */
  leads?: (() => boolean) | undefined;
  /** The compressed size of every stored recording together (`TETHER_RECORDINGS_MAX_TOTAL_BYTES`); absent: no bound. */
  maxTotalBytes?: number | undefined;
  /** Free space the data dir's filesystem keeps (`TETHER_RECORDINGS_MIN_FREE_BYTES`); absent or 0: no floor. */
  minFreeBytes?: number | undefined;
  /** Copies finished recordings into the database and deletes their files (`database-copies.ts`); absent: on PostgreSQL. */
  inDatabase?: boolean | undefined;
}

const EMPTY_SHA256 = createHash('sha256').digest('hex');

/** A recording in memory, and its row's writes, one after another in the order they were asked for. */
interface Active {
  row: Pick<RecordingRow, 'session_id' | 'file'>;
  recording: SessionRecording;
  write(work: () => Promise<void>): Promise<void>;
}

/** The store's bounds as a whole (`store-budget.ts`), and their metrics. */
function budgetOf(settings: RecorderSettings, log: Logger, metrics: Metrics | undefined) {
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
  metrics?.gauge('tether_recordings_stored_bytes', 'Compressed bytes of every stored shell recording together.', () => budget.used);
  return budget;
}

/** Writes to one recording's row in order; one that fails is logged, and the next start repairs the row. */
function rowWriter(log: Logger, sessionId: string): Active['write'] {
  let last = Promise.resolve();
  return (work) => {
    last = last.then(work).catch((err: Error) => {
      // The database closed under a late write (shutdown), or did not answer.
      log.warn('could not record where a recording stands', { session_id: sessionId, err: err.message });
    });
    return last;
  };
}

export function createRecorder(store: Store, settings: RecorderSettings, log: Logger, now: () => number, metrics?: Metrics) {
  const active = new Map<string, Active>();
  /** Recordings being started (their session read, their row written): streams that come meanwhile wait on them. */
  const starting = new Map<string, Promise<Active | undefined>>();
  const budget = budgetOf(settings, log, metrics);
  const closing = new Set<Promise<void>>();
  const closingIds = new Set<string>();
  const fileOf = (row: Pick<RecordingRow, 'file'>) => join(settings.dir, row.file);
  const retention = createRetention({ store, retentionDays: settings.retentionDays, fileOf, budget, log, now, leads: settings.leads });
  const busy = (sessionId: string) => active.has(sessionId) || starting.has(sessionId);
  const repair = rowRepair({ store, budget, fileOf, now });
  const copies = (settings.inDatabase ?? store.dialect === 'postgres') ? createDatabaseCopies({ store, dir: settings.dir, busy, repair, log }) : undefined;

  function track(work: Promise<void>): void {
    closing.add(work);
    void work.finally(() => closing.delete(work));
  }

  /** Starts recording a session not in memory; undefined when it is not recorded. */
  async function begin(grant: StreamGrant, startedAt: number): Promise<Active | undefined> {
    const session = await store.sessions.get(grant.sessionId);
    // A session recorded before, but no longer in memory, belongs to an earlier run: it was
    // closed at start-up and admits no stream. Never append to a file whose hash is not known.
    if (!session || (await store.recordings.get(grant.sessionId))) return undefined;
    mkdirSync(settings.dir, { recursive: true, mode: 0o700 });
    // No room: the recording is kept, empty and truncated, saying why, and the session goes on.
    const refusal = budget.admit();
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
    await store.recordings.insert(row);
    const write = rowWriter(log, session.session_id);
    const recording = new SessionRecording({
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
      onProgress: (progress) =>
        write(async () => {
          await store.recordings.update(session.session_id, progress);
          // Every stream ended (or the session closed): what the file holds is final up to here.
          if (copies && progress.ended_at !== null) await copies.stretchEnded(row, progress);
        }),
    });
    const started = { row, recording, write };
    active.set(grant.sessionId, started);
    if (refusal) log.info('not recording a shell session: the recordings store is full', { session_id: session.session_id, why: refusal.why });
    else log.info('recording a shell session', { session_id: session.session_id, input: settings.recordInput });
    return started;
  }

  /** A stream of a recording in memory; `again`: not its first, so its row says a stream is being recorded again. */
  function streamOf({ recording, write }: Active, sessionId: string, again: boolean): StreamRecording {
    if (again) void write(() => store.recordings.reopen(sessionId));
    return recording.streamStarted();
  }

  const port: StreamRecorder = {
    start(grant: StreamGrant): StreamRecording | undefined {
      if (grant.protocol !== 'shell' || !settings.recordShell) return undefined;
      const sessionId = grant.sessionId;
      const inMemory = active.get(sessionId);
      if (inMemory) return streamOf(inMemory, sessionId, true);
      // The taps start now; what they see waits (in order) for the recording to have started.
      let started = starting.get(sessionId);
      const again = started !== undefined;
      if (!started) {
        started = begin(grant, now())
          .catch((err: Error) => {
            log.error('could not start recording a shell session; it goes on unrecorded', { session_id: sessionId, err: err.message });
            return undefined;
          })
          .finally(() => starting.delete(sessionId));
        starting.set(sessionId, started);
      }
      return deferredRecording(started, (a) => streamOf(a, sessionId, again));
    },
  };

  return {
    port,

    /** Where a session's recording stands while it is in memory (being recorded, or not yet closed). */
    live: (sessionId: string): LiveRecording | undefined => active.get(sessionId)?.recording.live(),

    /** How many compressed bytes of a recording may be read: all of a finished one, the complete batches of one in progress. */
    readableBytes: (row: RecordingRow): number => active.get(row.session_id)?.recording.storedBytes ?? row.stored_bytes,

    fileOf,

    /** The session closed: its recording is finished and let go (once it has started, if it is starting). */
    sessionClosed(sessionId: string): void {
      const started = starting.get(sessionId);
      // Waits on the start after the streams that wait on it (they started first).
      if (started) return track(started.then(() => this.sessionClosed(sessionId)));
      const { row, recording } = active.get(sessionId) ?? {};
      if (!row || !recording || closingIds.has(sessionId)) return;
      closingIds.add(sessionId);
      // In memory until its row is final (and on PostgreSQL its file copied and deleted): the record and the reads go by it meanwhile.
      track(
        recording
          .close()
          .then(() => copies?.letGo(row, recording.storedBytes))
          .finally(() => {
            active.delete(sessionId);
            closingIds.delete(sessionId);
          }),
      );
    },

    /**
     * At start-up: counts what the store holds, repairs what a killed server left (on PostgreSQL:
     * and copies it into the database, with every file here the database lacks), applies the
     * retention, and arms it.
     */
    async start(): Promise<void> {
      budget.reset(await store.recordings.totalStored());
      await repairUnfinished({ store, repair, busy, fileOf, copies, log });
      await copies?.leftovers();
      await retention.purge();
      retention.arm();
    },

    /** Deletes the recordings older than the retention: the file, then the row. */
    purge: retention.purge,

    /** Finishes every recording (their sessions closed at shutdown) before the database closes. */
    async stop(): Promise<void> {
      retention.disarm();
      await Promise.allSettled([...starting.values()]);
      for (const id of [...active.keys()]) this.sessionClosed(id);
      await Promise.allSettled([...closing]);
    },
  };
}
export type Recorder = ReturnType<typeof createRecorder>;
