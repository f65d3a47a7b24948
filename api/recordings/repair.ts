/**
 * @module The repair of a recording a killed server left unfinished: its complete lines are kept,
 * a batch cut short by the kill (a partial line, a gzip member cut short) is dropped whole, and
 * the file is rewritten in its place; what it then holds is what the row must say.
 */
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { rename, stat } from 'node:fs/promises';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip, createGzip } from 'node:zlib';
import { parseCastEvent } from '../../shared/asciicast';

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
