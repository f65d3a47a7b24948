/** @module Idempotency keys: the first request under a caller's key, and its response once it succeeded. */
import type { Db } from './db';

/** How long a key is remembered. */
export const IDEMPOTENCY_KEY_TTL_MS = 24 * 60 * 60 * 1000;

export interface StoredResponse {
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

/** What `begin` found: a fresh claim, a request still running, another request, or one to replay. */
export type KeyClaim =
  | { kind: 'claimed' }
  | { kind: 'in_progress' }
  | { kind: 'reused' }
  | { kind: 'replay'; response: StoredResponse };

interface KeyRow {
  fingerprint: string;
  status: number | null;
  headers: string | null;
  body: string | null;
}

export function createIdempotencyRepo(db: Db) {
  const select = db.prepare<[string, string, number], KeyRow>(
    'SELECT fingerprint, status, headers, body FROM idempotency_keys WHERE caller = ? AND key = ? AND created_at > ?',
  );
  const insert = db.prepare(
    'INSERT OR REPLACE INTO idempotency_keys (caller, key, fingerprint, created_at) VALUES (?, ?, ?, ?)',
  );
  const finish = db.prepare('UPDATE idempotency_keys SET status = ?, headers = ?, body = ? WHERE caller = ? AND key = ?');
  const release = db.prepare('DELETE FROM idempotency_keys WHERE caller = ? AND key = ? AND status IS NULL');
  const expire = db.prepare('DELETE FROM idempotency_keys WHERE created_at <= ?');
  const abandon = db.prepare('DELETE FROM idempotency_keys WHERE status IS NULL');

  /** Claims `key` for a request, unless a live row says otherwise (one transaction: two requests cannot both claim it). */
  const begin = db.transaction((caller: string, key: string, fingerprint: string, now: number): KeyClaim => {
    const row = select.get(caller, key, now - IDEMPOTENCY_KEY_TTL_MS);
    if (!row) {
      insert.run(caller, key, fingerprint, now);
      return { kind: 'claimed' };
    }
    if (row.fingerprint !== fingerprint) return { kind: 'reused' };
    if (row.status === null) return { kind: 'in_progress' };
    return { kind: 'replay', response: { status: row.status, headers: JSON.parse(row.headers!), body: JSON.parse(row.body!) } };
  });

  return {
    begin,
    /** Keeps the response of the request that claimed the key. */
    finish(caller: string, key: string, response: StoredResponse): void {
      finish.run(response.status, JSON.stringify(response.headers), JSON.stringify(response.body ?? null), caller, key);
    },
    /** Forgets a claim whose request failed: a retry runs again. */
    release(caller: string, key: string): void {
      release.run(caller, key);
    },
    /** Removes keys older than 24 hours; returns how many. */
    expire: (now: number): number => expire.run(now - IDEMPOTENCY_KEY_TTL_MS).changes,
    /** Claims left by requests a previous run never finished (it stopped or was killed). */
    abandonUnfinished: (): number => abandon.run().changes,
  };
}
