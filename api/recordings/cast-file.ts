/**
 * @module A recording's file: each batch a gzip member of its own (compressed in the thread pool),
 * appended whole or not at all, so the file is always a valid gzip stream up to its last batch,
 * whatever happens to the server. A member that would pass the file's size cap or the store's
 * bounds (`store-budget.ts`) is not written; what was written is counted and hashed as it goes.
 */
import { createHash } from 'node:crypto';
import { open, type FileHandle } from 'node:fs/promises';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import type { StoreBudget } from './store-budget';

const gzipAsync = promisify(gzip);

/** One batch's text and its compressed member. */
export interface Member {
  raw: Buffer;
  member: Buffer;
}

/** Compresses one batch's text into a member of its own (in the thread pool). */
export async function compressMember(text: string): Promise<Member> {
  const raw = Buffer.from(text, 'utf8');
  return { raw, member: await gzipAsync(raw) };
}

export interface CastFileOptions {
  /** The file, opened for appending. */
  path: string;
  /** The compressed file's largest size. */
  maxStoredBytes: number;
  /** The store as a whole; absent, only `maxStoredBytes` bounds the file. */
  budget?: StoreBudget | undefined;
}

export class CastFile {
  readonly #o: CastFileOptions;
  #file: Promise<FileHandle> | undefined;
  readonly #hash = createHash('sha256');
  #bytes = 0;
  #stored = 0;

  constructor(options: CastFileOptions) {
    this.#o = options;
  }

  /** The cast's bytes written so far (uncompressed). */
  get bytes(): number {
    return this.#bytes;
  }

  /** The compressed bytes written so far. */
  get stored(): number {
    return this.#stored;
  }

  /** The SHA-256 of the cast written so far. */
  sha256(): string {
    return this.#hash.copy().digest('hex');
  }

  /**
   * Claims room for one member: why not, when the file's size cap or the store's bounds refuse it.
   * `force`: beyond the store's bounds (the header, a refusal's note), not beyond the file's own cap.
   */
  claim({ member }: Member, force = false): string | undefined {
    if (this.#stored + member.length > this.#o.maxStoredBytes) {
      return `the recording reached its size cap of ${this.#o.maxStoredBytes} bytes`;
    }
    return this.#o.budget?.claim(member.length, force)?.why;
  }

  /** Appends a member `claim` made room for; a failed write gives the room back. */
  async append({ raw, member }: Member): Promise<void> {
    try {
      const file = await (this.#file ??= open(this.#o.path, 'a', 0o600));
      await file.write(member);
    } catch (err) {
      this.#o.budget?.release(member.length);
      throw err;
    }
    this.#stored += member.length;
    this.#bytes += raw.length;
    this.#hash.update(raw);
  }

  /** Syncs and lets go of the file; the next append opens it again. */
  async close(): Promise<void> {
    const file = this.#file;
    this.#file = undefined;
    if (!file) return;
    const handle = await file.catch(() => undefined);
    await handle?.sync().catch(() => {});
    await handle?.close().catch(() => {});
  }
}
