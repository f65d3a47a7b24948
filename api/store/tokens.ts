/** @module Bearer tokens of users and service accounts, stored as SHA-256 hashes only. */
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

interface PrincipalRow extends Omit<Principal, 'scopes' | 'tenants'> {
  scopes: string;
  tenants: string;
}

const toPrincipal = (row: PrincipalRow): Principal => ({
  ...row,
  scopes: JSON.parse(row.scopes) as string[],
  tenants: JSON.parse(row.tenants) as string[],
});

export function createTokenRepo(db: Db) {
  const insert = db.prepare(
    `INSERT INTO tokens (token_id, token_hash, username, scopes, tenants, created_at, expires_at)
     VALUES (@token_id, @token_hash, @username, @scopes, @tenants, @created_at, @expires_at)`,
  );
  const byHash = db.prepare<[string], PrincipalRow>(
    `SELECT t.token_id, t.username, t.scopes, t.tenants, t.created_at, t.expires_at, t.revoked_at, u.role, u.kind
       FROM tokens t JOIN users u ON u.username = t.username WHERE t.token_hash = ?`,
  );
  const revoke = db.prepare<[string, string]>(
    'UPDATE tokens SET revoked_at = ? WHERE token_id = ? AND revoked_at IS NULL',
  );
  const exists = db.prepare<[string], { token_id: string }>('SELECT token_id FROM tokens WHERE token_id = ?');

  return {
    insert(record: Omit<TokenRecord, 'revoked_at'>, tokenHash: string): void {
      insert.run({
        ...record,
        token_hash: tokenHash,
        scopes: JSON.stringify(record.scopes),
        tenants: JSON.stringify(record.tenants),
      });
    },
    /** The token with this hash and its user, revoked or expired ones included. */
    findByHash(tokenHash: string): Principal | undefined {
      const row = byHash.get(tokenHash);
      return row && toPrincipal(row);
    },
    exists: (tokenId: string): boolean => exists.get(tokenId) !== undefined,
    /** Revokes a token; false if it was unknown or already revoked. */
    revoke: (tokenId: string, at: string): boolean => revoke.run(at, tokenId).changes === 1,
  };
}
export type TokenRepo = ReturnType<typeof createTokenRepo>;
