/**
 * @module Resolves bearer tokens to principals, remembering recent ones for a few seconds so a
 * busy client does not cost a hash and a query per request. Revocation empties the entry at
 * once (this process is the only writer), and expiry is checked on every use, so neither ever
 * waits for the cache.
 */
import { sha256Hex } from '../../shared/ids';
import type { Principal, TokenRepo } from '../store/tokens';

const TTL_MS = 5000;
const MAX_ENTRIES = 10_000;

export interface TokenResolver {
  /** The valid principal of a raw token at `now`, or undefined. */
  resolve(token: string, now: number): Principal | undefined;
  /** Forgets a revoked token. */
  revoked(tokenId: string): void;
}

export function createTokenResolver(tokens: TokenRepo, monotonic: () => number = () => performance.now()): TokenResolver {
  const cache = new Map<string, { principal: Principal | undefined; at: number }>();
  return {
    resolve(token, now) {
      const t = monotonic();
      let hit = cache.get(token);
      if (!hit || t - hit.at > TTL_MS) {
        if (cache.size >= MAX_ENTRIES) cache.delete(cache.keys().next().value!);
        hit = { principal: tokens.findByHash(sha256Hex(token)), at: t };
        cache.delete(token);
        cache.set(token, hit);
      }
      const p = hit.principal;
      if (!p || p.revoked_at !== null) return undefined;
      if (p.expires_at !== null && Date.parse(p.expires_at) <= now) return undefined;
      return p;
    },
    revoked(tokenId) {
      for (const [token, entry] of cache) if (entry.principal?.token_id === tokenId) cache.delete(token);
    },
  };
}
