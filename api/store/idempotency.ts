/**
 * @module Idempotency keys: the first request under a caller's key, and its response once it
 * succeeded. The key itself is never stored (its SHA-256 is), and the response is sealed with
 * AES-256-GCM under a key derived (HKDF) from the idempotency key, the caller and a server
 * secret: responses can hold secrets shown once (an agent token, a bearer token), and a copy of
 * the database must not hand them out. Only a caller who has the idempotency key can open one.
 *
 * Peers share the table: a claim is the database's (the primary key on caller and key hash), so
 * of peers claiming one key at once exactly one gets it.
 */
import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto';
import type { Role } from '../roles';
import { affected, type Executor } from './schema';

/** How long a key is remembered. */
export const IDEMPOTENCY_KEY_TTL_MS = 24 * 60 * 60 * 1000;

/**
 * A claim this old and still unfinished belongs to a run that stopped: a request's body is read
 * before it claims its key, and what follows (a few statements) never takes this long. Peers
 * sharing a database give it to `abandonUnfinished`, so that none forgets another's running claims.
 */
export const ABANDONED_CLAIM_MS = 15 * 60 * 1000;

export interface StoredResponse {
  status: number;
  headers: Record<string, string>;
  body: unknown;
  /** The caller's role when it was made (sealed with it): a replay needs at least that role still. */
  role?: Role | null;
}

/** What `begin` found: a fresh claim, a request still running, another request, or one to replay. */
export type KeyClaim = { kind: 'claimed' } | { kind: 'in_progress' } | { kind: 'reused' } | { kind: 'replay'; response: StoredResponse };

const hashOf = (key: string) => createHash('sha256').update(key).digest('hex');
const IV_BYTES = 12;
const TAG_BYTES = 16;
/** Claims tried before `begin` gives up: each retry means the row it found went away meanwhile. */
const CLAIM_ATTEMPTS = 3;

/** `secret`: the server's own (kept in the database's secrets), mixed into every sealing key. */
export function createIdempotencyRepo(db: Executor, secret: () => Promise<Buffer>) {
  const keys = () => db.selectFrom('idempotency_keys');

  const sealingKey = async (caller: string, key: string) => Buffer.from(hkdfSync('sha256', key, await secret(), `tether idempotency ${caller}`, 32));

  async function seal(caller: string, key: string, response: StoredResponse): Promise<Buffer> {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', await sealingKey(caller, key), iv);
    const sealed = Buffer.concat([cipher.update(JSON.stringify(response)), cipher.final()]);
    return Buffer.concat([iv, cipher.getAuthTag(), sealed]);
  }

  async function open(caller: string, key: string, blob: Buffer): Promise<StoredResponse> {
    const decipher = createDecipheriv('aes-256-gcm', await sealingKey(caller, key), blob.subarray(0, IV_BYTES));
    decipher.setAuthTag(blob.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    return JSON.parse(Buffer.concat([decipher.update(blob.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8'));
  }

  /** Inserts the claim unless a row for the key is there; true when this call inserted it. */
  async function claim(caller: string, keyHash: string, fingerprint: string, now: number): Promise<boolean> {
    // A row past its 24 hours no longer counts, swept or not: it makes way for the new claim.
    await db
      .deleteFrom('idempotency_keys')
      .where('caller', '=', caller)
      .where('key_hash', '=', keyHash)
      .where('created_at', '<=', now - IDEMPOTENCY_KEY_TTL_MS)
      .execute();
    const inserted = await db
      .insertInto('idempotency_keys')
      .values({ caller, key_hash: keyHash, fingerprint, created_at: now })
      .onConflict((oc) => oc.columns(['caller', 'key_hash']).doNothing())
      .returning('caller')
      .executeTakeFirst();
    return inserted !== undefined;
  }

  return {
    /**
     * Claims `key` for a request, unless a live row says otherwise. The claim is one insert that
     * the primary key decides, so two requests (on any peers) never both claim a key.
     */
    async begin(caller: string, key: string, fingerprint: string, now: number): Promise<KeyClaim> {
      const keyHash = hashOf(key);
      for (let attempt = 1; ; attempt++) {
        if (await claim(caller, keyHash, fingerprint, now)) return { kind: 'claimed' };
        const row = await keys()
          .select(['fingerprint', 'status', 'response'])
          .where('caller', '=', caller)
          .where('key_hash', '=', keyHash)
          .where('created_at', '>', now - IDEMPOTENCY_KEY_TTL_MS)
          .executeTakeFirst();
        if (row) {
          if (row.fingerprint !== fingerprint) return { kind: 'reused' };
          if (row.status === null || row.response === null) return { kind: 'in_progress' };
          return { kind: 'replay', response: await open(caller, key, row.response) };
        }
        // The row that stood in the way was released (its request failed) or swept meanwhile.
        if (attempt === CLAIM_ATTEMPTS) return { kind: 'in_progress' };
      }
    },
    /** Keeps the response of the request that claimed the key, sealed. */
    async finish(caller: string, key: string, response: StoredResponse): Promise<void> {
      const sealed = await seal(caller, key, response);
      await db
        .updateTable('idempotency_keys')
        .set({ status: response.status, response: sealed })
        .where('caller', '=', caller)
        .where('key_hash', '=', hashOf(key))
        .execute();
    },
    /** Forgets a claim whose request failed: a retry runs again. A finished response is kept. */
    async release(caller: string, key: string): Promise<void> {
      await db.deleteFrom('idempotency_keys').where('caller', '=', caller).where('key_hash', '=', hashOf(key)).where('status', 'is', null).execute();
    },
    /** Removes keys older than 24 hours; returns how many. */
    expire: async (now: number): Promise<number> =>
      affected(
        await db
          .deleteFrom('idempotency_keys')
          .where('created_at', '<=', now - IDEMPOTENCY_KEY_TTL_MS)
          .executeTakeFirst(),
      ),
    /**
     * Forgets the unfinished claims made before `startedBefore`: requests a stopped run never
     * finished. A server alone on its database passes now; peers sharing one pass now less
     * ABANDONED_CLAIM_MS, since the others' requests still running hold claims too.
     */
    abandonUnfinished: async (startedBefore: number): Promise<number> =>
      affected(await db.deleteFrom('idempotency_keys').where('status', 'is', null).where('created_at', '<', startedBefore).executeTakeFirst()),
  };
}
