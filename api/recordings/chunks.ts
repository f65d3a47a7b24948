/**
 * @module A recording's compressed file in the database (`recording_chunks`, CONTRACT 10.1: every
 * peer reads every recording, also after the peer that recorded it is gone). A finished recording
 * is copied CHUNK_BYTES a row, seq 0..n, in one transaction, read from its file one chunk at a
 * time, and checked before it commits: the cast the chunks decompress to has the row's size and
 * SHA-256, and the chunks together hold the row's `stored_bytes`. A peer reads the chunks back
 * one query at a time, as the response asks for them: never a whole recording in memory.
 */
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { open, type FileHandle } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import type { Store } from '../store/index';
import type { RecordingProgress } from '../store/recordings';

/** The bytes of one chunk (the last one of a recording may be shorter). */
export const CHUNK_BYTES = 1024 * 1024;

/** What the copy of a recording must hold: its first `stored_bytes` compressed bytes, the cast of `bytes` and `sha256`. */
export type Finished = Pick<RecordingProgress, 'stored_bytes' | 'bytes' | 'sha256'>;

const EMPTY_SHA256 = createHash('sha256').digest('hex');

/** Hashes the cast a compressed recording holds as its chunks go by. */
function castDigest() {
  const gunzip = createGunzip();
  const hash = createHash('sha256');
  let bytes = 0;
  let failed: Error | undefined;
  gunzip.on('data', (data: Buffer) => {
    hash.update(data);
    bytes += data.length;
  });
  const ended = new Promise<void>((resolve) => {
    gunzip.once('end', resolve);
    gunzip.on('error', (err: Error) => {
      failed ??= err;
      resolve();
    });
  });
  return {
    async write(data: Buffer): Promise<void> {
      if (failed) throw failed;
      if (!gunzip.write(data)) await Promise.race([once(gunzip, 'drain'), ended]);
    },
    async end(): Promise<{ bytes: number; sha256: string }> {
      gunzip.end();
      await ended;
      if (failed) throw new Error(`the recording does not decompress: ${failed.message}`);
      return { bytes, sha256: hash.digest('hex') };
    },
    close: () => gunzip.destroy(),
  };
}

/** `length` bytes of a recording's `file` from `position`; fails when the file is shorter than its row says. */
export async function readAt(file: FileHandle, position: number, length: number): Promise<Buffer> {
  const data = Buffer.allocUnsafe(length);
  for (let got = 0; got < length;) {
    const { bytesRead } = await file.read(data, got, length - got, position + got);
    if (bytesRead === 0) throw new Error(`its file ends at ${position + got} bytes, before the ${position + length} its row counts`);
    got += bytesRead;
  }
  return data;
}

/**
 * Copies the first `finished.stored_bytes` bytes of the file at `path` into the database as the
 * chunks of recording `sessionId`, in place of any it had, in one transaction; rejects (and
 * nothing changes) when the file or the copy does not hold what `finished` says. Resolves to the
 * number of chunks.
 */
export async function copyToDatabase(store: Store, sessionId: string, path: string, finished: Finished): Promise<number> {
  const digest = castDigest();
  try {
    return await store.transaction(async (tx) => {
      await tx.recordings.deleteChunks(sessionId);
      let seq = 0;
      let cast = { bytes: 0, sha256: EMPTY_SHA256 };
      if (finished.stored_bytes > 0) {
        const file = await open(path, 'r');
        try {
          for (let at = 0; at < finished.stored_bytes; seq++) {
            const data = await readAt(file, at, Math.min(CHUNK_BYTES, finished.stored_bytes - at));
            await digest.write(data);
            await tx.recordings.insertChunk(sessionId, seq, data);
            at += data.length;
          }
        } finally {
          await file.close();
        }
        cast = await digest.end();
      }
      if (cast.bytes !== finished.bytes || cast.sha256 !== finished.sha256) {
        throw new Error(`the file holds a cast of ${cast.bytes} bytes (sha256 ${cast.sha256}), its row says ${finished.bytes} (${finished.sha256})`);
      }
      const held = await tx.recordings.chunkTotals(sessionId);
      if (held.bytes !== finished.stored_bytes || held.chunks !== seq) {
        throw new Error(`the database holds ${held.chunks} chunks of ${held.bytes} bytes, not ${seq} of ${finished.stored_bytes}`);
      }
      return seq;
    });
  } finally {
    digest.close();
  }
}

/**
 * The first `total` bytes of a recording's chunks (what they held when the read began), in order,
 * a chunk fetched each time the reader wants more: a slow client holds one chunk at a time. A
 * chunk missing before `total` (the recording deleted meanwhile) ends the stream with an error.
 */
export function chunkReader(store: Store, sessionId: string, total: number): Readable {
  let seq = 0;
  let left = total;
  const stream = new Readable({
    read() {
      if (left <= 0) {
        stream.push(null);
        return;
      }
      store.recordings.chunk(sessionId, seq++).then(
        (data) => {
          if (!data) {
            stream.destroy(new Error(`chunk ${seq - 1} of the recording of ${sessionId} is gone`));
            return;
          }
          const part = data.length > left ? data.subarray(0, left) : data;
          left -= part.length;
          stream.push(part);
          if (left === 0) stream.push(null);
        },
        (err: Error) => stream.destroy(err),
      );
    },
  });
  return stream;
}
