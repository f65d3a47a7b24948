/**
 * @module `log.tail`: the last lines of a file inside one of the log dirs, read backwards from the
 * end in chunks so a huge log costs no more than the lines asked for (capped at 16 MiB).
 */
import { realpath } from 'node:fs/promises';
import { isAbsolute } from 'node:path';
import { isInside, openConfined } from '../../shared/fs-confine';
import { TransferError } from '../../shared/transfer-error';

export const MAX_TAIL_LINES = 10_000;
const CHUNK = 64 * 1024;
const MAX_READ = 16 * 1024 * 1024;

export async function logTail(logDirs: readonly string[], path: string, lines: number) {
  if (!isAbsolute(path)) throw new TransferError('bad_params', 'params.path must be an absolute path');
  let real: string;
  try {
    real = await realpath(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new TransferError('not_found', `no such file: ${path}`);
    throw err;
  }
  let root: string | undefined;
  for (const dir of logDirs) {
    try {
      const realDir = await realpath(dir);
      if (isInside(realDir, real)) root = realDir;
    } catch {
      // a configured log dir that does not exist
    }
  }
  if (!root) throw new TransferError('path_outside_root', `${path} is not inside the log dirs (${logDirs.join(', ')})`);

  const handle = await openConfined(root, real, path);
  try {
    const { size } = await handle.stat();
    const chunks: Buffer[] = [];
    let newlines = 0;
    let position = size;
    let read = 0;
    // One more newline than lines wanted: the text after it is whole lines.
    while (position > 0 && newlines <= lines && read < MAX_READ) {
      const length = Math.min(CHUNK, position);
      position -= length;
      const buf = Buffer.alloc(length);
      await handle.read(buf, 0, length, position);
      chunks.unshift(buf);
      read += length;
      for (const byte of buf) if (byte === 10) newlines++;
    }
    const text = Buffer.concat(chunks).toString('utf8');
    const all = text.split('\n');
    if (all.at(-1) === '') all.pop(); // the file's final newline ends the last line
    if (position > 0) all.shift(); // the first piece may be part of an earlier line
    return { path, lines: all.slice(-lines) };
  } finally {
    await handle.close();
  }
}
