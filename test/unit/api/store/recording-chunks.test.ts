/**
 * A recording's chunks on the store under test (api/store/recordings.ts, `recording_chunks`):
 * written and read back by seq, counted with their bytes, replaced, and deleted with their row
 * (the foreign key cascades); a chunk of no recording is refused.
 */
import { describe, expect, it } from 'vitest';
import { failure, storeForEachTest } from '../../../helpers/store';

const row = (sessionId: string) => ({
  session_id: sessionId,
  device_id: 'dev-1',
  username: 'ann',
  started_at: '2026-01-01T00:00:00.000Z',
  sha256: 'e3b0',
  input: false,
  file: `${sessionId}.cast.gz`,
});

describe('recording chunks', () => {
  const store = storeForEachTest();

  it('are written and read back by seq, byte for byte, and counted with their bytes', async () => {
    await store.recordings.insert(row('a'));
    await store.recordings.insert(row('b'));
    expect(await store.recordings.chunkTotals('a')).toEqual({ chunks: 0, bytes: 0 });
    const bytes = Buffer.from(Array.from({ length: 256 }, (_, i) => i)); // every byte value, NUL included
    await store.recordings.insertChunk('a', 0, bytes);
    await store.recordings.insertChunk('a', 1, Buffer.from('tail'));
    await store.recordings.insertChunk('b', 0, Buffer.from('other'));
    const first = await store.recordings.chunk('a', 0);
    expect(Buffer.isBuffer(first)).toBe(true);
    expect(first!.equals(bytes)).toBe(true);
    expect((await store.recordings.chunk('a', 1))!.toString()).toBe('tail');
    expect(await store.recordings.chunk('a', 2)).toBeUndefined();
    expect(await store.recordings.chunkTotals('a')).toEqual({ chunks: 2, bytes: 260 });
    expect(await store.recordings.chunkTotals('b')).toEqual({ chunks: 1, bytes: 5 });
    expect(await store.recordings.chunkTotals('none')).toEqual({ chunks: 0, bytes: 0 });
  });

  it('refuse a seq twice and a recording that does not exist', async () => {
    await store.recordings.insert(row('a'));
    await store.recordings.insertChunk('a', 0, Buffer.from('x'));
    expect(await failure(() => store.recordings.insertChunk('a', 0, Buffer.from('y')))).toBeInstanceOf(Error);
    expect(await failure(() => store.recordings.insertChunk('ghost', 0, Buffer.from('y')))).toBeInstanceOf(Error);
  });

  it('are deleted alone (to be written again), or with their row', async () => {
    for (const id of ['a', 'b']) {
      await store.recordings.insert(row(id));
      await store.recordings.insertChunk(id, 0, Buffer.from('one'));
      await store.recordings.insertChunk(id, 1, Buffer.from('two'));
    }
    expect(await store.recordings.deleteChunks('a')).toBe(2);
    expect(await store.recordings.chunkTotals('a')).toEqual({ chunks: 0, bytes: 0 });
    expect(await store.recordings.get('a')).toBeDefined();
    expect(await store.recordings.delete('b')).toBe(true);
    expect(await store.recordings.chunkTotals('b')).toEqual({ chunks: 0, bytes: 0 });
    expect(await store.recordings.chunk('b', 0)).toBeUndefined();
  });

  it('roll back with the transaction that wrote them', async () => {
    await store.recordings.insert(row('a'));
    await store.recordings.insertChunk('a', 0, Buffer.from('kept'));
    await failure(() =>
      store.transaction(async (tx) => {
        await tx.recordings.deleteChunks('a');
        await tx.recordings.insertChunk('a', 0, Buffer.from('new'));
        throw new Error('rolled back');
      }),
    );
    expect((await store.recordings.chunk('a', 0))!.toString()).toBe('kept');
  });
});
