/**
 * @module Listing tokens (docs/http-api.md, users and tokens): one's own, or (administrators)
 * another user's or everyone's, each with its status as of the request, so no client has to
 * work out whether a token still works. A disabled or deleted user has no active token: disabling
 * and deleting revoke them (./accounts.ts).
 */
import { requireAccess } from '../access';
import type { Store } from '../store/index';
import type { Principal, TokenRecord, TokenStatus } from '../store/tokens';

export interface TokenListing {
  /** Every user's tokens (administrators). */
  all?: boolean | undefined;
  /** One user's tokens; another user's needs an administrator. */
  username?: string | undefined;
  status: TokenStatus;
  limit: number;
  offset: number;
}

/** A token as listed: whether it works now, and whether it is the one asking. */
export interface ListedToken extends TokenRecord {
  status: Exclude<TokenStatus, 'all'>;
  current: boolean;
}

/** `revoked`, `expired` (without being revoked) or `active`, at `now`. */
export function statusOf(t: Pick<TokenRecord, 'revoked_at' | 'expires_at'>, now: string): ListedToken['status'] {
  if (t.revoked_at !== null) return 'revoked';
  if (t.expires_at !== null && t.expires_at <= now) return 'expired';
  return 'active';
}

/** A page of tokens, newest first. */
export async function listTokens(store: Store, caller: Principal, q: TokenListing, now: string): Promise<{ items: ListedToken[]; total: number }> {
  if (q.all === true || (q.username !== undefined && q.username !== caller.username)) {
    requireAccess(caller, 'identity:read', 'administrator', "listing other users' tokens");
  }
  const username = q.all === true ? undefined : (q.username ?? caller.username);
  const { items, total } = await store.tokens.list({ username, status: q.status, now, limit: q.limit, offset: q.offset });
  return { items: items.map((t) => ({ ...t, status: statusOf(t, now), current: t.token_id === caller.token_id })), total };
}
