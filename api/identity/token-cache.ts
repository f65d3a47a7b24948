/**
 * @module Resolves bearer tokens to principals, remembering recent ones for a few seconds so a
 * busy client does not cost a hash and a query per request (requests that miss at once share one
 * query). Revocation through this process empties the entry at once, and so does any change to
 * the token's user (role, disabled, deleted) made through it, lookups still in flight included;
 * a change another peer makes shows here once the entry is older than the few seconds. Expiry is
 * checked on every use, so it never waits for the cache.
 */
import { sha256Hex } from '../../shared/ids';
import type { Principal, TokenLookup, TokenRepo } from '../store/tokens';

const TTL_MS = 5000;
const MAX_ENTRIES = 10_000;

export interface TokenResolver {
  /** The valid principal of a raw token at `now`, or undefined. */
  resolve(token: string, now: number): Promise<Principal | undefined>;
  /** The same, from the token's SHA-256 (hex), as a cluster node sends it (docs/cluster.md). */
  resolveHash(tokenHash: string, now: number): Promise<Principal | undefined>;
  /** Forgets a revoked token. */
  revoked(tokenId: string): void;
  /** Forgets every token of a user that changed. */
  userChanged(username: string): void;
}

/** A lookup, remembered from `at`: `pending` until the database answered, then `principal`. */
interface Entry {
  at: number;
  pending: Promise<TokenLookup | undefined> | undefined;
  principal: TokenLookup | undefined;
}

export function createTokenResolver(tokens: Pick<TokenRepo, 'findByHash'>, monotonic: () => number = () => performance.now()): TokenResolver {
  const cache = new Map<string, Entry>();
  /** Forgets the entries `matches` picks, and every lookup in flight (it may have read the state before the change). */
  function forget(matches: (p: TokenLookup) => boolean): void {
    for (const [key, entry] of cache) if (entry.pending || (entry.principal && matches(entry.principal))) cache.delete(key);
  }
  /** Starts a lookup of `hash` remembered under `key`; a failed one is forgotten at once. */
  function start(key: string, hash: string, at: number): Entry {
    const entry: Entry = { at, pending: undefined, principal: undefined };
    entry.pending = tokens.findByHash(hash).then(
      (principal) => {
        entry.principal = principal;
        entry.pending = undefined;
        return principal;
      },
      (err: unknown) => {
        if (cache.get(key) === entry) cache.delete(key);
        throw err;
      },
    );
    if (cache.size >= MAX_ENTRIES) cache.delete(cache.keys().next().value!);
    cache.delete(key);
    cache.set(key, entry);
    return entry;
  }
  /** `key`: the raw token, or `#` and its hash; `hash` computes the hash when the key is not cached. */
  async function lookup(key: string, hash: () => string, now: number): Promise<Principal | undefined> {
    const t = monotonic();
    let hit = cache.get(key);
    if (!hit || t - hit.at > TTL_MS) hit = start(key, hash(), t);
    const p = hit.pending ? await hit.pending : hit.principal;
    if (!p || p.revoked_at !== null || p.user_disabled) return undefined;
    if (p.expires_at !== null && Date.parse(p.expires_at) <= now) return undefined;
    return p;
  }
  return {
    resolve: (token, now) => lookup(token, () => sha256Hex(token), now),
    resolveHash: (tokenHash, now) => lookup(`#${tokenHash}`, () => tokenHash, now),
    revoked: (tokenId) => forget((p) => p.token_id === tokenId),
    userChanged: (username) => forget((p) => p.username === username),
  };
}
