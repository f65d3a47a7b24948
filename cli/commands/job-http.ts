/**
 * @module The request of `tether job` that the API client's JSON calls do not make: a streamed
 * upload of a file (`POST /v1/blobs`, with a progress bar on a terminal; `../raw-request`). (The
 * events it follows are `../event-stream`.)
 */
import { createReadStream } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import type { Blob } from '../../shared/api/jobs';
import { ApiFailure, type ApiErrorCode } from '../api-client';
import { credentials } from '../config';
import type { Context } from '../context';
import { CliError } from '../errors';
import { createProgress } from '../progress';
import { requestTo } from '../raw-request';

function readText(res: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => chunks.push(c));
    res.on('error', reject);
    res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
  });
}

/** The API's error answer as the API client would throw it (its code, its message). */
function failureOf(res: IncomingMessage, text: string): CliError {
  let body: { error?: unknown; message?: unknown } = {};
  try {
    body = JSON.parse(text) as typeof body;
  } catch {
    // not JSON: the status says it
  }
  const status = res.statusCode ?? 0;
  if (status >= 500) return new CliError(`the server failed (HTTP ${status}, request id ${res.headers['x-request-id'] ?? 'unknown'})`, 'bad_answer');
  const code = (typeof body.error === 'string' ? body.error : 'unknown') as ApiErrorCode;
  const message = typeof body.message === 'string' ? body.message : `HTTP ${status}`;
  return new ApiFailure(status, { error: code, message, status }, null);
}

/**
 * Uploads `file` (`size` bytes) as a blob, streamed from the disk, never read whole; a progress
 * bar on a terminal. Resolves with the blob the server stored (its size and SHA-256).
 */
export function uploadBlob(ctx: Context, file: string, size: number): Promise<Blob> {
  const progress = createProgress('uploading', size);
  let stopped = false;
  const stop = () => {
    if (!stopped) progress.stop();
    stopped = true;
  };
  return new Promise<Blob>((resolve, reject) => {
    const req = requestTo(ctx, 'POST', '/v1/blobs', { 'content-type': 'application/octet-stream', 'content-length': size });
    let answered = false;
    req.on('response', (res) => {
      answered = true;
      readText(res)
        .then((text) => {
          stop();
          if (res.statusCode === 201) return resolve((JSON.parse(text) as { data: Blob }).data);
          reject(failureOf(res, text));
        })
        .catch(() => reject(new CliError(`unexpected answer from ${credentials(ctx.env).server} to the upload`, 'bad_answer')));
    });
    const source = createReadStream(file);
    req.on('error', (err: NodeJS.ErrnoException) => {
      source.destroy();
      // An answer before the whole body (413) cuts the upload short: the answer says why.
      if (answered) return;
      stop();
      reject(new CliError(`cannot upload ${file} to ${credentials(ctx.env).server}: ${err.code ?? err.message}`, 'unreachable'));
    });
    source.on('error', (err: NodeJS.ErrnoException) => {
      req.destroy();
      stop();
      reject(new CliError(`cannot read ${file}: ${err.code ?? err.message}`, 'local_file'));
    });
    source.on('data', (chunk) => progress.add(chunk.length));
    // pipe() waits while the socket is behind: the file is never held whole.
    source.pipe(req);
  });
}
