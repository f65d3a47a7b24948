/**
 * @module Moving files through a file-transfer stream from the client's side: packing a local
 * tree into an upload, and extracting a download with the same safety as the agent (no `..`,
 * no absolute names, temporary files renamed into place only when everything arrived).
 */
import { lstat, opendir, realpath } from 'node:fs/promises';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { WebSocket } from 'ws';
import { createExtraction } from '../shared/tar-extract';
import { packTree } from '../shared/tar-pack';
import { CliError } from './errors';
import type { Stream } from './stream';

const SEND_HIGH_WATER = 4 * 1024 * 1024;

/** Total size and count of the files below `path` (for the progress bar). */
export async function measure(path: string): Promise<{ files: number; bytes: number }> {
  const s = await lstat(path);
  if (s.isFile()) return { files: 1, bytes: s.size };
  if (!s.isDirectory()) return { files: 0, bytes: 0 };
  let files = 0;
  let bytes = 0;
  for await (const d of await opendir(path)) {
    const sub = await measure(join(path, d.name));
    files += sub.files;
    bytes += sub.bytes;
  }
  return { files, bytes };
}

/** A Writable whose chunks go out as binary frames, waiting while the socket is behind. */
function socketWritable(ws: WebSocket): Writable {
  return new Writable({
    highWaterMark: 256 * 1024,
    write(chunk: Buffer, _enc, callback) {
      if (ws.readyState !== WebSocket.OPEN) return callback(new CliError('the stream closed during the upload'));
      let called = false;
      const done = (err?: Error | null) => {
        if (called) return;
        called = true;
        callback(err);
      };
      ws.send(chunk, { binary: true }, (err) => {
        if (err) done(err);
        else if (ws.bufferedAmount <= SEND_HIGH_WATER) done();
      });
      if (ws.bufferedAmount <= SEND_HIGH_WATER) done();
    },
  });
}

export interface UploadPlan {
  local: string;
  /** Directory on the device that receives the top entry. */
  remoteDir: string;
  /** Name of the top entry there. */
  topName: string;
}

/** Streams the local file or tree into `remoteDir` as `topName`; checks what the device got. */
export async function upload(stream: Stream, plan: UploadPlan, onBytes: (n: number) => void, onSkip: (name: string, why: string) => void) {
  const start = await stream.request('upload', { path: plan.remoteDir });
  const real = await realpath(plan.local);
  const controller = new AbortController();
  // The device answers the upload's id once more: at the end, or at once if it refuses an entry.
  const answer = new Promise<{ files: number; bytes: number }>((resolve, reject) => {
    stream.onMessage((msg) => {
      if (msg?.id !== start.id || !('ok' in msg)) return;
      if (msg.ok) resolve(msg.result);
      else reject(new CliError(`the device refused the upload: ${msg.error?.message} (${msg.error?.code})`));
    });
    void stream.closed.then(({ code, reason }) => reject(new CliError(`the stream closed during the upload (${code}${reason ? `: ${reason}` : ''})`)));
  });
  answer.catch(() => controller.abort());
  let sent;
  try {
    sent = await packTree(real, real, socketWritable(stream.ws), { signal: controller.signal, topName: plan.topName, onBytes, onSkip });
  } catch (err) {
    if (controller.signal.aborted) await answer; // the device's reason is the better message
    throw err;
  }
  stream.ws.send(JSON.stringify({ id: start.id, op: 'end' }));
  const received = await answer;
  if (received.files !== sent.files || received.bytes !== sent.bytes) {
    throw new CliError(
      `the device stored ${received.files} files / ${received.bytes} bytes, but ${sent.files} files / ${sent.bytes} bytes were sent`,
    );
  }
  return sent;
}

export interface DownloadPlan {
  remote: string;
  /** Local directory that receives the top entry (exists). */
  localDir: string;
  topName: string;
}

/** Streams a remote file or tree into `localDir` as `topName`; checks what arrived. */
export async function download(stream: Stream, plan: DownloadPlan, onBytes: (n: number) => void) {
  const realDir = await realpath(plan.localDir);
  const extraction = createExtraction(realDir, realDir, {
    maxBytes: 0,
    maxEntries: Number.MAX_SAFE_INTEGER,
    rename: (segments) => (segments.length > 0 ? [plan.topName, ...segments.slice(1)] : segments),
    onBytes,
  });
  const failed = new Promise<never>((_, reject) => {
    extraction.extract.on('error', () =>
      reject(extraction.failure ?? new CliError('the download is not a valid tar stream')),
    );
    void stream.closed.then(({ code, reason }) => reject(new CliError(`the stream closed during the download (${code}${reason ? `: ${reason}` : ''})`)));
  });
  failed.catch(() => {});
  const done = new Promise<{ files: number; bytes: number }>((resolve) =>
    stream.onMessage((msg) => {
      if (msg?.done === true) resolve({ files: msg.files, bytes: msg.bytes });
    }),
  );
  stream.onBinary((data) => {
    if (!extraction.input.write(data)) {
      stream.ws.pause();
      extraction.extract.once('drain', () => stream.ws.resume());
    }
  });
  try {
    await stream.request('download', { path: plan.remote });
    const announced = await Promise.race([done, failed]);
    const got = await Promise.race([extraction.commit(), failed]);
    if (got.files !== announced.files || got.bytes !== announced.bytes) {
      throw new CliError(
        `received ${got.files} files / ${got.bytes} bytes, but the device sent ${announced.files} files / ${announced.bytes} bytes`,
      );
    }
    return got;
  } catch (err) {
    await extraction.abort(err);
    throw err;
  }
}
