/**
 * @module `GET /v1/remote-access/sessions/{id}/recording` (docs/http-api.md, recordings): the
 * session's recording as asciicast v2, or with `?format=text` its output as plain text, streamed
 * from the compressed file (never held whole): this server's file when it has one (it recorded
 * the session), else the file's chunks in the database (PostgreSQL: a peer recorded it). Who may
 * see the session may read it (its owner and administrators; anyone else gets 404), and every
 * read is an audit event `recording.viewed`.
 */
import { open } from 'node:fs/promises';
import { pipeline, Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import Router from '@koa/router';
import { recordingQuery, type Recording } from '../../shared/api/sessions';
import { notFound } from '../errors';
import { principalOf } from '../http/auth';
import { parseQuery } from '../http/validate';
import type { Sessions } from '../sessions/sessions';
import type { Store } from '../store/index';
import type { RecordingRow } from '../store/recordings';
import { chunkReader } from './chunks';
import type { Recorder } from './recorder';
import { castToText } from './text-export';

/** The `recording` field of a session record: where its recording stands, or null. */
export function recordingViewer(store: Store, recorder: Recorder) {
  return async function recordingOf(sessionId: string): Promise<Recording | null> {
    const row = await store.recordings.get(sessionId);
    if (!row) return null;
    const live = recorder.live(sessionId);
    return {
      bytes: live?.bytes ?? row.bytes,
      sha256: live?.sha256 ?? row.sha256,
      duration_s: Math.round((live?.duration_s ?? row.duration_s) * 1000) / 1000,
      truncated: live?.truncated ?? row.truncated,
      stored_bytes: live?.stored_bytes ?? row.stored_bytes,
      input: row.input,
      in_progress: live?.recording ?? false,
    };
  };
}

/**
 * A recording's compressed bytes: from this server's file, up to what may be read of it; else from
 * its chunks in the database. null: an empty recording; undefined: neither holds it.
 */
async function compressedOf(store: Store, recorder: Recorder, row: RecordingRow): Promise<Readable | null | undefined> {
  // Opened first: a file deleted meanwhile (copied into the database, or the retention's) stays readable once open.
  const file = await open(recorder.fileOf(row), 'r').catch(() => undefined);
  if (file) {
    // Complete batches only: a recording in progress is read up to its last written one.
    const readable = recorder.readableBytes(row);
    if (readable > 0) return file.createReadStream({ start: 0, end: readable - 1 });
    await file.close();
    return null;
  }
  const held = await store.recordings.chunkTotals(row.session_id);
  return held.bytes > 0 ? chunkReader(store, row.session_id, held.bytes) : undefined;
}

export function recordingRoutes(deps: { store: Store; sessions: Sessions; recorder: Recorder; now: () => number }): Router {
  const { store, sessions, recorder } = deps;
  const router = new Router();

  router.get('/v1/remote-access/sessions/:sessionId/recording', async function getRecording(ctx) {
    const { format } = parseQuery(ctx, recordingQuery);
    const principal = principalOf(ctx);
    const session = await sessions.get(principal, ctx.params.sessionId!); // 404 for anyone who may not see it
    const row = await store.recordings.get(session.session_id);
    const compressed = row && (await compressedOf(store, recorder, row));
    if (compressed === undefined) throw notFound(`session ${session.session_id} has no recording`);
    await store.audit
      .append({
        event: 'recording.viewed',
        session_id: session.session_id,
        device_id: session.device_id,
        protocol: session.protocol,
        actor: principal.username,
        owner: session.opened_by,
        reason: format,
        at: new Date(deps.now()).toISOString(),
        trace_id: session.trace_id,
        targets: session.targets,
      })
      .catch((err: unknown) => {
        compressed?.destroy(); // lets go of the file
        throw err;
      });
    const stages: Array<Readable | NodeJS.ReadWriteStream> = [];
    if (compressed) stages.push(compressed, createGunzip());
    else stages.push(Readable.from([]));
    if (format === 'text') stages.push(castToText());
    // One pipeline: a failure anywhere (the file deleted meanwhile, a corrupt batch) ends the response.
    const body = stages.length === 1 ? (stages[0] as Readable) : (pipeline(stages as [Readable, ...NodeJS.ReadWriteStream[]], () => {}) as unknown as Readable);
    const name = `${session.session_id}.${format === 'text' ? 'txt' : 'cast'}`;
    ctx.set('Content-Disposition', `attachment; filename="${name}"`);
    ctx.type = format === 'text' ? 'text/plain; charset=utf-8' : 'application/x-asciicast';
    ctx.body = body;
  });

  return router;
}
