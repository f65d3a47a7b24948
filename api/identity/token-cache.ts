/**
 * @module Resolves bearer tokens to principals, remembering recent ones for a few seconds so a
 * busy client does not cost a hash and a query per request. Revocation empties the entry at
 * once, and so does any change to the token's user (role, disabled, deleted: this process is the
 * only writer); expiry is checked on every use, so none of them ever waits for the cache.
 */
import { sha256Hex } from '../../shared/ids';
import type { Principal, TokenLookup, TokenRepo } from '../store/tokens';

const TTL_MS = 5000;
const MAX_ENTRIES = 10_000;

export interface TokenResolver {
  /** The valid principal of a raw token at `now`, or undefined. */
  resolve(token: string, now: number): Principal | undefined;
  /** The same, from the token's SHA-256 (hex), as a cluster node sends it (docs/cluster.md). */
  resolveHash(tokenHash: string, now: number): Principal | undefined;
  /** Forgets a revoked token. */
  revoked(tokenId: string): void;
  /** Forgets every token of a user that changed. */
  userChanged(username: string): void;
}

export function createTokenResolver(tokens: TokenRepo, monotonic: () => number = () => performance.now()): TokenResolver {
  const cache = new Map<string, { principal: TokenLookup | undefined; at: number }>();
  function forget(matches: (p: TokenLookup) => boolean): void {
    for (const [token, entry] of cache) if (entry.principal && matches(entry.principal)) cache.delete(token);
  }
  /** `key`: the raw token, or `#` and its hash; `hash` computes the hash when the key is not cached. */
  function lookup(key: string, hash: () => string, now: number): Principal | undefined {
    const t = monotonic();
    let hit = cache.get(key);
    if (!hit || t - hit.at > TTL_MS) {
      if (cache.size >= MAX_ENTRIES) cache.delete(cache.keys().next().value!);
      hit = { principal: tokens.findByHash(hash()), at: t };
      cache.delete(key);
      cache.set(key, hit);
    }
    const p = hit.principal;
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
