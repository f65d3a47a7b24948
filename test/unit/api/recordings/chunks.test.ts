/**
 * A recording's file copied into the database in chunks, and read back (api/recordings/chunks.ts),
 * on the store under test: chunks of 1 MiB in order, only the bytes its row counts, checked
 * against the row (a short file, another cast, are refused and change nothing), and read back a
 * chunk at a time as the reader asks.
 */
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { appendFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { text } from 'node:stream/consumers';
import { gunzipSync, gzipSync } from 'node:zlib';
import { describe, expect, it, vi } from 'vitest';
import { CHUNK_BYTES, chunkReader, copyToDatabase } from '../../../../api/recordings/chunks';
import { failure, storeForEachTest } from '../../../helpers/store';
import { tempDir } from '../../../helpers/temp';

/** A recording's file: a cast of `lines` random lines, gzip in members of 64 KiB of text, as the recorder writes it. */
function castFile(lines: number) {
  const cast = Buffer.from(
    ['{"version":2,"width":80,"height":24}', ...Array.from({ length: lines }, (_, i) => JSON.stringify([i / 10, 'o', randomBytes(600).toString('base64')]))]
      .map((l) => `${l}\n`)
      .join(''),
  );
  const members: Buffer[] = [];
  for (let at = 0; at < cast.length; at += 64 * 1024) members.push(gzipSync(cast.subarray(at, at + 64 * 1024)));
  const file = Buffer.concat(members);
  const path = join(tempDir('tether-chunks-'), 'rec.cast.gz');
  writeFileSync(path, file);
  return { path, file, finished: { stored_bytes: file.length, bytes: cast.length, sha256: createHash('sha256').update(cast).digest('hex') } };
}

const recording = (sessionId: string) => ({
  session_id: sessionId,
  device_id: 'dev-1',
  username: 'ann',
  started_at: '2026-01-01T00:00:00.000Z',
  sha256: 'e3b0',
  input: false,
  file: `${sessionId}.cast.gz`,
});

describe('copying a recording into the database', () => {
  const store = storeForEachTest();

  it('writes it in chunks of 1 MiB, in order, and reads it back byte for byte, a chunk when asked', async () => {
    const { path, file, finished } = castFile(4000); // about 2.5 MiB compressed: random text barely compresses
    expect(file.length).toBeGreaterThan(2 * CHUNK_BYTES);
    await store.recordings.insert(recording('s1'));
    const chunks = await copyToDatabase(store, 's1', path, finished);
    expect(chunks).toBe(Math.ceil(file.length / CHUNK_BYTES));
    expect(await store.recordings.chunkTotals('s1')).toEqual({ chunks, bytes: file.length });
    for (let seq = 0; seq < chunks; seq++) {
      expect((await store.recordings.chunk('s1', seq))!.equals(file.subarray(seq * CHUNK_BYTES, (seq + 1) * CHUNK_BYTES))).toBe(true);
    }

    const fetch = vi.spyOn(store.recordings, 'chunk');
    const reader = chunkReader(store, 's1', file.length);
    await once(reader, 'readable');
    expect(fetch).toHaveBeenCalledTimes(1); // one chunk held, until the reader takes it
    const parts: Buffer[] = [];
    for await (const part of reader) parts.push(part as Buffer);
    expect(Buffer.concat(parts).equals(file)).toBe(true);
    expect(fetch).toHaveBeenCalledTimes(chunks);
    expect(
      createHash('sha256')
        .update(gunzipSync(Buffer.concat(parts)))
        .digest('hex'),
    ).toBe(finished.sha256);
  });

  it('copies only the bytes its row counts, in place of an earlier copy', async () => {
    const { path, file, finished } = castFile(100);
    await store.recordings.insert(recording('s1'));
    await store.recordings.insertChunk('s1', 0, Buffer.from('an earlier stretch'));
    await store.recordings.insertChunk('s1', 1, Buffer.from('of the recording'));
    appendFileSync(path, gzipSync('[9,"o","a stream after the end"]\n').subarray(0, 10)); // written after: not counted
    expect(await copyToDatabase(store, 's1', path, finished)).toBe(1);
    expect((await store.recordings.chunk('s1', 0))!.equals(file)).toBe(true);
    expect(await store.recordings.chunkTotals('s1')).toEqual({ chunks: 1, bytes: file.length });
  });

  it('refuses a file shorter than its row says, or holding another cast, and changes nothing', async () => {
    const { path, finished } = castFile(100);
    await store.recordings.insert(recording('s1'));
    await store.recordings.insertChunk('s1', 0, Buffer.from('kept'));
    const refusals = [
      { ...finished, stored_bytes: finished.stored_bytes + 1 },
      { ...finished, sha256: 'f'.repeat(64) },
      { ...finished, bytes: finished.bytes - 1 },
      { ...finished, stored_bytes: finished.stored_bytes - 5 }, // a member cut short
    ];
    for (const wrong of refusals) {
      expect(await failure(() => copyToDatabase(store, 's1', path, wrong))).toBeInstanceOf(Error);
      expect(await store.recordings.chunkTotals('s1')).toEqual({ chunks: 1, bytes: 4 });
    }
    expect(await failure(() => copyToDatabase(store, 's1', join(tempDir(), 'gone.cast.gz'), finished))).toMatchObject({ code: 'ENOENT' });
    expect(await failure(() => copyToDatabase(store, 'no-row', path, finished))).toBeInstanceOf(Error);
  });

  it('copies an empty recording as no chunk, without a file', async () => {
    await store.recordings.insert(recording('s1'));
    await store.recordings.insertChunk('s1', 0, Buffer.from('earlier'));
    const empty = { stored_bytes: 0, bytes: 0, sha256: createHash('sha256').digest('hex') };
    expect(await copyToDatabase(store, 's1', join(tempDir(), 'never-written.cast.gz'), empty)).toBe(0);
    expect(await store.recordings.chunkTotals('s1')).toEqual({ chunks: 0, bytes: 0 });
  });
});

describe('reading a recording from the database', () => {
  const store = storeForEachTest();

  it('stops at the bytes its chunks held when the read began', async () => {
    await store.recordings.insert(recording('s1'));
    await store.recordings.insertChunk('s1', 0, Buffer.from('abc'));
    await store.recordings.insertChunk('s1', 1, Buffer.from('defgh'));
    expect(await text(chunkReader(store, 's1', 5))).toBe('abcde');
    expect(await text(chunkReader(store, 's1', 8))).toBe('abcdefgh');
  });

  it('fails when a chunk is gone before the end (the recording deleted meanwhile)', async () => {
    await store.recordings.insert(recording('s1'));
    await store.recordings.insertChunk('s1', 0, Buffer.from('abc'));
    expect(await failure(() => text(chunkReader(store, 's1', 10)))).toMatchObject({ message: expect.stringMatching(/chunk 1 .* is gone/) });
  });
});
