/**
 * @module Blobs: files uploaded once for `file-push` jobs (CONTRACT 10.2), kept in the database in
 * chunks of 1 MiB (`blob_chunks`, seq 0..n in order) so that every peer serves them. An upload is
 * written chunk by chunk, never held whole, and without one long transaction (which would hold
 * SQLite's write lock for as long as a slow client sends); until it ends its row's `sha256` is
 * empty and no read sees it, and an upload that fails or is too large is deleted with its chunks.
 */
import { createHash } from 'node:crypto';
import { randomBase32 } from '../../shared/ids';
import type { Executor } from './schema';

export const BLOB_CHUNK_BYTES = 1024 * 1024;

export interface BlobRow {
  blob_id: string;
  size: number;
  sha256: string;
  created_by: string;
  created_at: string;
}

/** Why a write stopped: the body went past the limit (nothing is kept). */
export class BlobTooLargeError extends Error {
  override name = 'BlobTooLargeError';
  readonly code = 'payload_too_large';
  constructor(readonly limit: number) {
    super(`the blob exceeds ${limit} bytes`);
  }
}

export const newBlobId = (): string => `blob_${randomBase32(20)}`;

/** An upload's row until it is complete: read as absent. */
const WRITING = '';

export function createBlobRepo(db: Executor) {
  const insertChunk = (blob_id: string, seq: number, data: Buffer) => db.insertInto('blob_chunks').values({ blob_id, seq, data }).execute();
  return {
    /**
     * Stores `source` as a new blob, at most `limit` bytes (else `BlobTooLargeError`, and nothing
     * is kept); answers it with its size and SHA-256. Reading waits while a chunk is written, so a
     * fast client is held back by the database, and at most about one chunk is in memory.
     */
    async write(source: AsyncIterable<Buffer>, who: { created_by: string; created_at: string }, limit: number): Promise<BlobRow> {
      const blob_id = newBlobId();
      await db
        .insertInto('blobs')
        .values({ blob_id, size: 0, sha256: WRITING, ...who })
        .execute();
      try {
        const hash = createHash('sha256');
        let size = 0;
        let seq = 0;
        let pending: Buffer[] = [];
        let pendingBytes = 0;
        const flush = async (upTo: number) => {
          const all = Buffer.concat(pending, pendingBytes);
          await insertChunk(blob_id, seq++, all.subarray(0, upTo));
          const rest = all.subarray(upTo);
          pending = rest.length > 0 ? [Buffer.from(rest)] : [];
          pendingBytes = rest.length;
        };
        for await (const piece of source) {
          size += piece.length;
          if (size > limit) throw new BlobTooLargeError(limit);
          hash.update(piece);
          pending.push(piece);
          pendingBytes += piece.length;
          while (pendingBytes >= BLOB_CHUNK_BYTES) await flush(BLOB_CHUNK_BYTES);
        }
        if (pendingBytes > 0) await flush(pendingBytes);
        const row: BlobRow = { blob_id, size, sha256: hash.digest('hex'), ...who };
        await db.updateTable('blobs').set({ size: row.size, sha256: row.sha256 }).where('blob_id', '=', blob_id).execute();
        return row;
      } catch (err) {
        // The chunks go with the row (the foreign key cascades).
        await db
          .deleteFrom('blobs')
          .where('blob_id', '=', blob_id)
          .execute()
          .catch(() => {});
        throw err;
      }
    },

    /** A complete blob's metadata, or undefined. */
    async get(blobId: string): Promise<BlobRow | undefined> {
      return db.selectFrom('blobs').selectAll().where('blob_id', '=', blobId).where('sha256', '<>', WRITING).executeTakeFirst();
    },

    /** A blob's bytes, one chunk at a time in order (read as they are asked for: backpressure). */
    async *read(blobId: string): AsyncGenerator<Buffer> {
      for (let seq = 0; ; seq++) {
        const row = await db.selectFrom('blob_chunks').select('data').where('blob_id', '=', blobId).where('seq', '=', seq).executeTakeFirst();
        if (!row) return;
        yield row.data;
      }
    },

    /** Uploads a killed server left unfinished before `before` (for housekeeping): deleted with their chunks. */
    async deleteUnfinished(before: string): Promise<number> {
      const r = await db.deleteFrom('blobs').where('sha256', '=', WRITING).where('created_at', '<', before).executeTakeFirst();
      return Number(r.numDeletedRows);
    },
  };
}
export type BlobRepo = ReturnType<typeof createBlobRepo>;
