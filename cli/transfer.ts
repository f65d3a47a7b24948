/**
 * @module Moving files through a file-transfer stream from the client's side: packing a local
 * tree into an upload, and extracting a download with the same safety as the agent (no `..`,
 * no absolute names, temporary files renamed into place only when everything arrived).
 */
import { lstat, opendir, realpath } from 'node:fs/promises';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import type { WsClient } from '../shared/websocket/client';
import { downloadStart, uploadDone, uploadReady, type UploadDone } from '../shared/protocol/session-stream';
import { createExtraction, type ExtractResult } from '../shared/files/tar-extract';
import { packTree, type PackResult } from '../shared/files/tar-pack';
import { CliError } from './errors';
import { explainClose } from './explain-close';
import { DeviceError, StreamClosedError, type ClientStream } from './stream';

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
function socketWritable(ws: WsClient): Writable {
  return new Writable({
    highWaterMark: 256 * 1024,
    write(chunk: Buffer, _enc, callback) {
      if (ws.state !== 'open') return callback(new CliError('the stream closed during the upload', 'stream_closed'));
      let called = false;
      const done = (err?: Error | null) => {
        if (called) return;
        called = true;
        callback(err);
      };
      ws.send(chunk, (err) => {
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

/** The error to show for a transfer that the device refused or the stream cut short. */
function transferFailure(what: 'upload' | 'download', err: unknown): unknown {
  if (err instanceof StreamClosedError) {
    const { closeCode: code, closeReason: reason } = err;
    // Cut without a close frame: the relay had passed on part of a frame when its other side went away.
    if (code === 1006) return new CliError(`the stream closed during the ${what}: ${explainClose(code, reason)}`, 'stream_closed');
    return new CliError(`the stream closed during the ${what} (${code}${reason ? `: ${reason}` : ''})`, 'stream_closed');
  }
  if (err instanceof DeviceError) return new CliError(`the device refused the ${what}: ${err.message}`, err.code);
  return err;
}

function failedDuring(what: 'upload' | 'download') {
  return function rethrowTransferFailure(err: unknown): never {
    throw transferFailure(what, err);
  };
}

/** Streams the local file or tree into `remoteDir` as `topName`; checks what the device got. */
export async function upload(
  stream: ClientStream,
  plan: UploadPlan,
  onBytes: (n: number) => void,
  onSkip: (name: string, why: string) => void,
): Promise<PackResult> {
  const call = stream.call('upload', { path: plan.remoteDir });
  await call.answer(uploadReady);
  const real = await realpath(plan.local);
  const controller = new AbortController();
  // The device answers the upload once more: at the end, or at once if it refuses an entry.
  const answer: Promise<UploadDone> = call.answer(uploadDone).catch(failedDuring('upload'));
  answer.catch(() => controller.abort());
  let sent;
  try {
    sent = await packTree(real, real, socketWritable(stream.ws), { signal: controller.signal, topName: plan.topName, onBytes, onSkip });
  } catch (err) {
    if (controller.signal.aborted) await answer; // the device's reason is the better message
    throw err;
  }
  call.uploadEnd();
  const received = await answer;
  call.finish();
  if (received.files !== sent.files || received.bytes !== sent.bytes) {
    throw new CliError(
      `the device stored ${received.files} files / ${received.bytes} bytes, but ${sent.files} files / ${sent.bytes} bytes were sent`,
      'mismatch',
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
export async function download(stream: ClientStream, plan: DownloadPlan, onBytes: (n: number) => void): Promise<ExtractResult> {
  const realDir = await realpath(plan.localDir);
  const extraction = createExtraction(realDir, realDir, {
    maxBytes: 0,
    maxEntries: Number.MAX_SAFE_INTEGER,
    rename: (segments) => (segments.length > 0 ? [plan.topName, ...segments.slice(1)] : segments),
    onBytes,
  });
  const failed = new Promise<never>((_, reject) => {
    extraction.extract.on('error', () => reject(extraction.failure ?? new CliError('the download is not a valid tar stream', 'bad_answer')));
    void stream.closed.then(({ code, reason }) => reject(transferFailure('download', new StreamClosedError(code, reason))));
  });
  failed.catch(() => {});
  stream.onBinary((data) => {
    if (!extraction.input.write(data)) {
      stream.ws.pause();
      extraction.extract.once('drain', () => stream.ws.resume());
    }
  });
  try {
    const call = stream.call('download', { path: plan.remote });
    await call.answer(downloadStart);
    const done = call.downloadDone().catch(failedDuring('download'));
    done.catch(() => {}); // when `failed` comes first
    const announced = await Promise.race([done, failed]);
    call.finish();
    const got = await Promise.race([extraction.commit(), failed]);
    if (got.files !== announced.files || got.bytes !== announced.bytes) {
      throw new CliError(
        `received ${got.files} files / ${got.bytes} bytes, but the device sent ${announced.files} files / ${announced.bytes} bytes`,
        'mismatch',
      );
    }
    return got;
  } catch (err) {
    await extraction.abort(err);
    throw err;
  }
}
