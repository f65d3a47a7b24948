/**
 * @module The repair of a recording a killed server left unfinished: its complete lines are kept,
 * a batch cut short by the kill (a partial line, a gzip member cut short) is dropped whole, and
 * the file is rewritten in its place; what it then holds is what the row must say. At start-up
 * every unfinished recording whose file is here is repaired (on PostgreSQL, one whose file is not
 * here is a peer's, being recorded), and on PostgreSQL copied into the database.
 */
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream, existsSync } from 'node:fs';
import { rename, stat } from 'node:fs/promises';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip, createGzip } from 'node:zlib';
import { parseCastEvent } from '../../shared/asciicast';
import type { Logger } from '../../shared/log';
import type { Store } from '../store/index';
import type { RecordingRow } from '../store/recordings';
import type { DatabaseCopies } from './database-copies';
import type { StoreBudget } from './store-budget';

/** What a repaired recording's file holds. */
export interface RepairedCast {
  duration_s: number;
  bytes: number;
  sha256: string;
  stored_bytes: number;
}

/** Rewrites the file at `path` with its complete lines only. */
export async function repairCast(path: string): Promise<RepairedCast> {
  const temp = `${path}.repair`;
  const hash = createHash('sha256');
  let bytes = 0;
  let lastT = 0;
  let partial = '';
  // Complete lines only: a batch cut short by the kill is dropped whole.
  const lines = new Transform({
    transform(chunk: Buffer, _enc, done) {
      const text = partial + chunk.toString('utf8');
      const cut = text.lastIndexOf('\n') + 1;
      partial = text.slice(cut);
      const whole = text.slice(0, cut);
      for (const line of whole.split('\n')) {
        const event = parseCastEvent(line);
        if (event) lastT = event[0];
      }
      const out = Buffer.from(whole, 'utf8');
      hash.update(out);
      bytes += out.length;
      done(null, out);
    },
  });
  const gunzip = createGunzip();
  // A gzip member cut short ends the input early; what came before it is kept.
  const lenient = new Transform({ transform: (c, _e, done) => done(null, c) });
  gunzip.on('error', () => lenient.end());
  createReadStream(path)
    .on('error', () => lenient.end())
    .pipe(gunzip)
    .pipe(lenient);
  await pipeline(lenient, lines, createGzip(), createWriteStream(temp, { mode: 0o600 }));
  await rename(temp, path);
  const stored = (await stat(path)).size;
  return { duration_s: lastT, bytes, sha256: hash.digest('hex'), stored_bytes: stored };
}

/** Repairs one recording's file and makes its row say what it holds (and returns the row as it now is). */
export function rowRepair(deps: { store: Store; budget: StoreBudget; fileOf(row: Pick<RecordingRow, 'file'>): string; now: () => number }) {
  return async function repair(row: RecordingRow): Promise<RecordingRow> {
    const repaired = await repairCast(deps.fileOf(row));
    deps.budget.reset(deps.budget.used - row.stored_bytes + repaired.stored_bytes);
    const progress = {
      ended_at: new Date(deps.now()).toISOString(),
      duration_s: repaired.duration_s,
      bytes: repaired.bytes,
      sha256: repaired.sha256,
      stored_bytes: repaired.stored_bytes,
      truncated: row.truncated,
    };
    await deps.store.recordings.update(row.session_id, progress);
    return { ...row, ...progress };
  };
}

export interface RepairUnfinishedDeps {
  store: Store;
  repair(row: RecordingRow): Promise<RecordingRow>;
  /** True for a recording this run has in memory (begun meanwhile). */
  busy(sessionId: string): boolean;
  fileOf(row: Pick<RecordingRow, 'file'>): string;
  /** On PostgreSQL: where repaired recordings go. */
  copies: DatabaseCopies | undefined;
  log: Logger;
}

/** At start-up: repairs the recordings a killed server left unfinished (on PostgreSQL, those whose file is here) and copies them. */
export async function repairUnfinished({ store, repair, busy, fileOf, copies, log }: RepairUnfinishedDeps): Promise<void> {
  for (const row of await store.recordings.unfinished()) {
    if (busy(row.session_id)) continue;
    // On PostgreSQL, an unfinished recording whose file is not here is a peer's, being recorded now.
    if (copies && !existsSync(fileOf(row))) continue;
    try {
      const repaired = await repair(row);
      log.info('repaired a recording the last run left unfinished', { session_id: row.session_id });
      await copies?.repaired(repaired);
    } catch (err) {
      log.error('could not repair a recording', { session_id: row.session_id, err: (err as Error).message });
    }
  }
}
