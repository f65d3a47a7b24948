/**
 * @module Bearer tokens of users and service accounts, stored as SHA-256 hashes only; listings
 * never read the hash.
 */
import type { Db } from './db';
import type { Role } from '../roles';
import type { UserKind } from './users';

export interface TokenRecord {
  token_id: string;
  username: string;
  scopes: string[];
  tenants: string[];
  created_at: string;
  expires_at: string | null;
  revoked_at: string | null;
}

/** A token joined with its user: what authentication yields. */
export interface Principal extends TokenRecord {
  role: Role | null;
  kind: UserKind;
}

/** A lookup by hash: the principal, and whether its user is disabled or deleted (then it admits no one). */
export interface TokenLookup extends Principal {
  user_disabled: boolean;
}

/** Which tokens a listing holds: `expired` are those that expired unrevoked. */
export type TokenStatus = 'active' | 'revoked' | 'expired' | 'all';

export interface TokenQuery {
  /** One user's tokens, or everyone's when undefined. */
  username?: string | undefined;
  status: TokenStatus;
  /** The time `active` and `expired` are judged at (ISO 8601). */
  now: string;
  limit: number;
  offset: number;
}

interface StoredRecord extends Omit<TokenRecord, 'scopes' | 'tenants'> {
  scopes: string;
  tenants: string;
}

interface LookupRow extends Omit<TokenLookup, 'scopes' | 'tenants' | 'user_disabled'> {
  scopes: string;
  tenants: string;
  user_disabled: number;
}

function toRecord<R extends StoredRecord>(row: R): Omit<R, 'scopes' | 'tenants'> & Pick<TokenRecord, 'scopes' | 'tenants'> {
  return { ...row, scopes: JSON.parse(row.scopes) as string[], tenants: JSON.parse(row.tenants) as string[] };
}

const RECORD_COLUMNS = 't.token_id, t.username, t.scopes, t.tenants, t.created_at, t.expires_at, t.revoked_at';
// The conditions of each status, for the listing's one prepared statement.
const LISTED = `(@username IS NULL OR t.username = @username)
  AND (@status = 'all'
    OR (@status = 'revoked' AND t.revoked_at IS NOT NULL)
    OR (@status = 'active' AND t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > @now))
    OR (@status = 'expired' AND t.revoked_at IS NULL AND t.expires_at <= @now))`;

export function createTokenRepo(db: Db) {
  const insert = db.prepare(
    `INSERT INTO tokens (token_id, token_hash, username, scopes, tenants, created_at, expires_at)
     VALUES (@token_id, @token_hash, @username, @scopes, @tenants, @created_at, @expires_at)`,
  );
  const byHash = db.prepare<[string], LookupRow>(
    `SELECT ${RECORD_COLUMNS}, u.role, u.kind, (u.disabled = 1 OR u.deleted_at IS NOT NULL) AS user_disabled
       FROM tokens t JOIN users u ON u.username = t.username WHERE t.token_hash = ?`,
  );
  const revoke = db.prepare<[string, string]>('UPDATE tokens SET revoked_at = ? WHERE token_id = ? AND revoked_at IS NULL');
  const byId = db.prepare<[string], StoredRecord>(`SELECT ${RECORD_COLUMNS} FROM tokens t WHERE t.token_id = ?`);
  type ListParams = Omit<TokenQuery, 'username'> & { username: string | null };
  const list = db.prepare<ListParams, StoredRecord>(
    `SELECT ${RECORD_COLUMNS} FROM tokens t WHERE ${LISTED}
      ORDER BY t.created_at DESC, t.token_id DESC LIMIT @limit OFFSET @offset`,
  );
  const count = db.prepare<Omit<ListParams, 'limit' | 'offset'>, { n: number }>(`SELECT COUNT(*) AS n FROM tokens t WHERE ${LISTED}`);
  const unrevokedOfUser = db.prepare<[string], { token_id: string }>('SELECT token_id FROM tokens WHERE username = ? AND revoked_at IS NULL ORDER BY token_id');
  const revokeAllOfUser = db.prepare<{ username: string; at: string; keep: string | null }, { token_id: string }>(
    `UPDATE tokens SET revoked_at = @at
      WHERE username = @username AND revoked_at IS NULL AND token_id IS NOT @keep
     RETURNING token_id`,
  );

  return {
    insert(record: Omit<TokenRecord, 'revoked_at'>, tokenHash: string): void {
      insert.run({
        ...record,
        token_hash: tokenHash,
        scopes: JSON.stringify(record.scopes),
        tenants: JSON.stringify(record.tenants),
      });
    },
    /** The token with this hash and its user, revoked or expired ones and disabled users included. */
    findByHash(tokenHash: string): TokenLookup | undefined {
      const row = byHash.get(tokenHash);
      return row && { ...toRecord(row), user_disabled: row.user_disabled === 1 };
    },
    /** The token of this id, whatever its state. */
    get(tokenId: string): TokenRecord | undefined {
      const row = byId.get(tokenId);
      return row && toRecord(row);
    },
    /** A page of tokens, newest first, and how many match in all. */
    list(q: TokenQuery): { items: TokenRecord[]; total: number } {
      const params = { username: q.username ?? null, status: q.status, now: q.now };
      const items = list.all({ ...params, limit: q.limit, offset: q.offset }).map(toRecord);
      return { items, total: count.get(params)!.n };
    },
    /** The ids of a user's tokens that are not revoked (expired ones included). */
    unrevokedIdsOf: (username: string): string[] => unrevokedOfUser.all(username).map((r) => r.token_id),
    /** Revokes a token; false if it was unknown or already revoked. */
    revoke: (tokenId: string, at: string): boolean => revoke.run(at, tokenId).changes === 1,
    /** Revokes every unrevoked token of a user but `keep`; returns the ids it revoked. */
    revokeAllOf: (username: string, at: string, keep?: string): string[] => revokeAllOfUser.all({ username, at, keep: keep ?? null }).map((r) => r.token_id),
  };
}
export type TokenRepo = ReturnType<typeof createTokenRepo>;
