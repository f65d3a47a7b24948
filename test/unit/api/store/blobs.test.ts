/**
 * The blobs repository on the store under test: a stream written in 1 MiB chunks with its size and
 * SHA-256 and read back byte for byte, a stream past the limit refused with nothing kept, and the
 * uploads a dead server left unfinished deleted for housekeeping. (Split from ./jobs.test.ts.)
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { BLOB_CHUNK_BYTES, BlobTooLargeError } from '../../../../api/store/blobs';
import { storeForEachTest } from '../../../helpers/store';

const T0 = '2026-03-01T10:00:00.000Z';

async function* pieces(total: number, size: number): AsyncGenerator<Buffer> {
  for (let sent = 0; sent < total; sent += size) {
    const n = Math.min(size, total - sent);
    yield Buffer.alloc(n, (sent / size) % 251);
  }
}

async function collect(source: AsyncIterable<Buffer>): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const p of source) parts.push(p);
  return Buffer.concat(parts);
}

describe('blobs repository', () => {
  const store = storeForEachTest();
  const who = { created_by: 'root', created_at: T0 };

  it('writes a stream in 1 MiB chunks with its size and SHA-256, and reads it back byte for byte', async () => {
    const size = 3 * BLOB_CHUNK_BYTES + 12_345;
    const expected = await collect(pieces(size, 64 * 1024 + 7));
    const blob = await store.blobs.write(pieces(size, 64 * 1024 + 7), who, 10 * BLOB_CHUNK_BYTES);
    expect(blob).toEqual({
      blob_id: expect.stringMatching(/^blob_[a-z2-7]{20}$/) as string,
      size,
      sha256: createHash('sha256').update(expected).digest('hex'),
      ...who,
    });
    expect(await store.blobs.get(blob.blob_id)).toEqual(blob);
    const chunks = await store.db.selectFrom('blob_chunks').select(['seq', 'data']).where('blob_id', '=', blob.blob_id).orderBy('seq').execute();
    expect(chunks.map((c) => [c.seq, c.data.length])).toEqual([
      [0, BLOB_CHUNK_BYTES],
      [1, BLOB_CHUNK_BYTES],
      [2, BLOB_CHUNK_BYTES],
      [3, 12_345],
    ]);
    expect((await collect(store.blobs.read(blob.blob_id))).equals(expected)).toBe(true);
    const empty = await store.blobs.write(pieces(0, 1), who, 10);
    expect(empty).toMatchObject({ size: 0, sha256: createHash('sha256').digest('hex') });
    expect((await collect(store.blobs.read(empty.blob_id))).length).toBe(0);
  });

  it('refuses a stream past the limit and keeps nothing of it', async () => {
    await expect(store.blobs.write(pieces(2 * BLOB_CHUNK_BYTES + 1, 100_000), who, 2 * BLOB_CHUNK_BYTES)).rejects.toBeInstanceOf(BlobTooLargeError);
    expect(await store.db.selectFrom('blobs').selectAll().execute()).toEqual([]);
    expect(await store.db.selectFrom('blob_chunks').select('seq').execute()).toEqual([]);
  });

  it('deletes, for housekeeping, uploads a dead server left unfinished before a time, with their chunks', async () => {
    const done = await store.blobs.write(pieces(10, 10), who, 100);
    // What a server killed mid-upload leaves: the row being written (no sha256 yet) and its chunks.
    for (const [blob_id, created_at] of [
      ['blob_cutoff', '2026-01-01T00:00:00.000Z'],
      ['blob_recent', '2026-12-31T00:00:00.000Z'],
    ] as const) {
      await store.db.insertInto('blobs').values({ blob_id, size: 0, sha256: '', created_by: 'root', created_at }).execute();
      await store.db
        .insertInto('blob_chunks')
        .values({ blob_id, seq: 0, data: Buffer.from('part') })
        .execute();
    }
    expect(await store.blobs.deleteUnfinished('2026-06-01T00:00:00.000Z')).toBe(1);
    const left = await store.db.selectFrom('blobs').select('blob_id').orderBy('blob_id').execute();
    expect(left.map((b) => b.blob_id).sort()).toEqual([done.blob_id, 'blob_recent'].sort());
    const chunks = await store.db.selectFrom('blob_chunks').select('blob_id').execute();
    expect(chunks.map((c) => c.blob_id)).not.toContain('blob_cutoff');
    expect(chunks.map((c) => c.blob_id)).toContain('blob_recent');
  });
});
