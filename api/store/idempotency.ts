/**
 * @module Idempotency keys: the first request under a caller's key, and its response once it
 * succeeded. The key itself is never stored (its SHA-256 is), and the response is sealed with
 * AES-256-GCM under a key derived (HKDF) from the idempotency key, the caller and a server
 * secret: responses can hold secrets shown once (an agent token, a bearer token), and a copy of
 * the database must not hand them out. Only a caller who has the idempotency key can open one.
 */
import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto';
import type { Role } from '../roles';
import type { Db } from './db';

/** How long a key is remembered. */
export const IDEMPOTENCY_KEY_TTL_MS = 24 * 60 * 60 * 1000;

export interface StoredResponse {
  status: number;
  headers: Record<string, string>;
  body: unknown;
  /** The caller's role when it was made (sealed with it): a replay needs at least that role still. */
  role?: Role | null;
}

/** What `begin` found: a fresh claim, a request still running, another request, or one to replay. */
export type KeyClaim = { kind: 'claimed' } | { kind: 'in_progress' } | { kind: 'reused' } | { kind: 'replay'; response: StoredResponse };

interface KeyRow {
  fingerprint: string;
  status: number | null;
  response: Buffer | null;
}

const hashOf = (key: string) => createHash('sha256').update(key).digest('hex');
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** `secret`: the server's own (kept in the database's secrets), mixed into every sealing key. */
export function createIdempotencyRepo(db: Db, secret: () => Buffer) {
  const select = db.prepare<[string, string, number], KeyRow>(
    'SELECT fingerprint, status, response FROM idempotency_keys WHERE caller = ? AND key_hash = ? AND created_at > ?',
  );
  const insert = db.prepare('INSERT OR REPLACE INTO idempotency_keys (caller, key_hash, fingerprint, created_at) VALUES (?, ?, ?, ?)');
  const finish = db.prepare('UPDATE idempotency_keys SET status = ?, response = ? WHERE caller = ? AND key_hash = ?');
  const release = db.prepare('DELETE FROM idempotency_keys WHERE caller = ? AND key_hash = ? AND status IS NULL');
  const expire = db.prepare('DELETE FROM idempotency_keys WHERE created_at <= ?');
  const abandon = db.prepare('DELETE FROM idempotency_keys WHERE status IS NULL');

  const sealingKey = (caller: string, key: string) => Buffer.from(hkdfSync('sha256', key, secret(), `tether idempotency ${caller}`, 32));

  function seal(caller: string, key: string, response: StoredResponse): Buffer {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', sealingKey(caller, key), iv);
    const sealed = Buffer.concat([cipher.update(JSON.stringify(response)), cipher.final()]);
    return Buffer.concat([iv, cipher.getAuthTag(), sealed]);
  }

  function open(caller: string, key: string, blob: Buffer): StoredResponse {
    const decipher = createDecipheriv('aes-256-gcm', sealingKey(caller, key), blob.subarray(0, IV_BYTES));
    decipher.setAuthTag(blob.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    return JSON.parse(Buffer.concat([decipher.update(blob.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8'));
  }

  /** Claims `key` for a request, unless a live row says otherwise (one transaction: two requests cannot both claim it). */
  const begin = db.transaction((caller: string, key: string, fingerprint: string, now: number): KeyClaim => {
    const keyHash = hashOf(key);
    const row = select.get(caller, keyHash, now - IDEMPOTENCY_KEY_TTL_MS);
    if (!row) {
      insert.run(caller, keyHash, fingerprint, now);
      return { kind: 'claimed' };
    }
    if (row.fingerprint !== fingerprint) return { kind: 'reused' };
    if (row.status === null) return { kind: 'in_progress' };
    return { kind: 'replay', response: open(caller, key, row.response!) };
  });

  return {
    begin,
    /** Keeps the response of the request that claimed the key, sealed. */
    finish(caller: string, key: string, response: StoredResponse): void {
      finish.run(response.status, seal(caller, key, response), caller, hashOf(key));
    },
    /** Forgets a claim whose request failed: a retry runs again. */
    release(caller: string, key: string): void {
      release.run(caller, hashOf(key));
    },
    /** Removes keys older than 24 hours; returns how many. */
    expire: (now: number): number => expire.run(now - IDEMPOTENCY_KEY_TTL_MS).changes,
    /** Claims left by requests a previous run never finished (it stopped or was killed). */
    abandonUnfinished: (): number => abandon.run().changes,
  };
}
