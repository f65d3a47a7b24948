/**
 * @module Rate-limit hits counted in the database (migration 12): a row per counted request, by
 * bucket (a limited group and a user), so that peers on one PostgreSQL database share every
 * per-user limit (CONTRACT 10.1). A bucket's window is sliding: the hits after `now - windowMs`.
 *
 * Counting and inserting is one decision per bucket, never a read and then a write that a peer
 * could slip between: on PostgreSQL the transaction first takes an advisory lock on the bucket
 * (other buckets are not held up); the insert itself is conditional on the count (one INSERT ...
 * SELECT ... WHERE), which on SQLite is the whole rule: each statement is a write transaction of
 * its own, SQLite takes its write lock before the statement reads (so it never upgrades a read
 * and meets SQLITE_BUSY mid-way), and a writer of another process is waited for (busy_timeout).
 * No multi-statement transaction is held open on SQLite, so connections of one process that
 * share the file never block each other's event loop.
 */
import { sql } from 'kysely';
import type { Dialect } from './db';
import { affected, atomically, type Executor } from './schema';

/** What `reserve` decided: counted (`wait` 0, the hit's `id`), or refused (the seconds to wait, no hit). */
export type RateLimitHit = { wait: 0; id: number } | { wait: number; id: undefined };

/** The seconds a full window of hits, the oldest at `oldest`, imposes at `now`: at least 1. */
const waitOf = (oldest: number, windowMs: number, now: number) => Math.max(1, Math.ceil((oldest + windowMs - now) / 1000));

export function createRateLimitRepo(db: Executor, dialect: Dialect) {
  /** Runs `fn` alone among the takers of `bucket`, on every peer. */
  function serialised<T>(bucket: string, fn: (ex: Executor) => Promise<T>): Promise<T> {
    if (dialect === 'sqlite') return fn(db);
    return atomically(db, async (tx) => {
      await sql`SELECT pg_advisory_xact_lock(hashtext(${bucket}))`.execute(tx);
      return fn(tx);
    });
  }

  /** The bucket's hits in the window at `now`: how many, and the oldest's time. */
  async function windowOf(ex: Executor, bucket: string, windowMs: number, now: number): Promise<{ n: number; oldest: number | null }> {
    const row = await ex
      .selectFrom('rate_limit_hits')
      .select((eb) => [eb.fn.countAll<number>().as('n'), eb.fn.min('at').as('oldest')])
      .where('bucket', '=', bucket)
      .where('at', '>', now - windowMs)
      .executeTakeFirstOrThrow();
    return { n: Number(row.n), oldest: row.oldest === null ? null : Number(row.oldest) };
  }

  /** Counts a hit of `bucket` at `now` unless its window holds `limit` already. */
  const reserve = (bucket: string, limit: number, windowMs: number, now: number): Promise<RateLimitHit> =>
    serialised(bucket, async (ex) => {
      const since = now - windowMs;
      await ex.deleteFrom('rate_limit_hits').where('bucket', '=', bucket).where('at', '<=', since).execute();
      const full = ex
        .selectFrom('rate_limit_hits')
        .select((eb) => eb.fn.countAll().as('n'))
        .where('bucket', '=', bucket)
        .where('at', '>', since);
      const inserted = await ex
        .insertInto('rate_limit_hits')
        .columns(['bucket', 'at'])
        .expression(
          ex
            .selectNoFrom((eb) => [eb.cast<string>(eb.val(bucket), 'text').as('bucket'), eb.cast<number>(eb.val(now), 'bigint').as('at')])
            .where(full, '<', limit),
        )
        .returning('id')
        .executeTakeFirst();
      if (inserted) return { wait: 0, id: Number(inserted.id) };
      // Refused: the window was full. On SQLite hits may age out or be given back between the two
      // statements; the wait still names the oldest hit left, or a second when none is.
      const { oldest } = await windowOf(ex, bucket, windowMs, now);
      return { wait: oldest === null ? 1 : waitOf(oldest, windowMs, now), id: undefined };
    });

  return {
    /** Counts a hit of `bucket` at `now` (ms) unless `limit` are in its window; the seconds to wait (0: counted). */
    take: async (bucket: string, limit: number, windowMs: number, now: number): Promise<number> => (await reserve(bucket, limit, windowMs, now)).wait,
    /** As `take`, with the counted hit's id, for `release`. */
    reserve,
    /** The seconds `bucket` must wait at `now` (0 if none), counting nothing. */
    async peek(bucket: string, limit: number, windowMs: number, now: number): Promise<number> {
      const { n, oldest } = await windowOf(db, bucket, windowMs, now);
      return n >= limit && oldest !== null ? waitOf(oldest, windowMs, now) : 0;
    },
    /** Uncounts the hit `id` (nothing if it is gone already). */
    async release(id: number): Promise<void> {
      await db.deleteFrom('rate_limit_hits').where('id', '=', id).execute();
    },
    /** Removes the hits of every bucket at or before `before` (ms); returns how many. */
    expire: async (before: number): Promise<number> => affected(await db.deleteFrom('rate_limit_hits').where('at', '<=', before).executeTakeFirst()),
  };
}

export type RateLimitRepo = ReturnType<typeof createRateLimitRepo>;
