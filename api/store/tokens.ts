/**
 * @module Bearer tokens of users and service accounts, stored as SHA-256 hashes only; listings
 * never read the hash.
 */
import type { ExpressionBuilder } from 'kysely';
import { affected, type Executor, type Row, type Schema } from './schema';
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

const RECORD_COLUMNS = ['t.token_id', 't.username', 't.scopes', 't.tenants', 't.created_at', 't.expires_at', 't.revoked_at'] as const;
type StoredRecord = Omit<Row<'tokens'>, 'token_hash'>;

function toRecord(row: StoredRecord): TokenRecord {
  return { ...row, scopes: JSON.parse(row.scopes) as string[], tenants: JSON.parse(row.tenants) as string[] };
}

/** The filters of a listing, as a WHERE clause. */
function listed(q: Omit<TokenQuery, 'limit' | 'offset'>) {
  return (eb: ExpressionBuilder<Schema & { t: Schema['tokens'] }, 't'>) => {
    const terms = [];
    if (q.username !== undefined) terms.push(eb('t.username', '=', q.username));
    if (q.status === 'revoked') terms.push(eb('t.revoked_at', 'is not', null));
    if (q.status === 'active') terms.push(eb('t.revoked_at', 'is', null), eb.or([eb('t.expires_at', 'is', null), eb('t.expires_at', '>', q.now)]));
    if (q.status === 'expired') terms.push(eb('t.revoked_at', 'is', null), eb('t.expires_at', '<=', q.now));
    return eb.and(terms);
  };
}

export function createTokenRepo(db: Executor) {
  return {
    async insert(record: Omit<TokenRecord, 'revoked_at'>, tokenHash: string): Promise<void> {
      await db
        .insertInto('tokens')
        .values({ ...record, token_hash: tokenHash, scopes: JSON.stringify(record.scopes), tenants: JSON.stringify(record.tenants) })
        .execute();
    },
    /** The token with this hash and its user, revoked or expired ones and disabled users included. */
    async findByHash(tokenHash: string): Promise<TokenLookup | undefined> {
      const row = await db
        .selectFrom('tokens as t')
        .innerJoin('users as u', 'u.username', 't.username')
        .select([...RECORD_COLUMNS, 'u.role', 'u.kind', 'u.disabled', 'u.deleted_at'])
        .where('t.token_hash', '=', tokenHash)
        .executeTakeFirst();
      if (!row) return undefined;
      const { role, kind, disabled, deleted_at: deletedAt, ...record } = row;
      return { ...toRecord(record), role: role as Role | null, kind: kind as UserKind, user_disabled: disabled === 1 || deletedAt !== null };
    },
    /** The token of this id, whatever its state. */
    async get(tokenId: string): Promise<TokenRecord | undefined> {
      const row = await db.selectFrom('tokens as t').select(RECORD_COLUMNS).where('t.token_id', '=', tokenId).executeTakeFirst();
      return row && toRecord(row);
    },
    /** A page of tokens, newest first, and how many match in all. */
    async list(q: TokenQuery): Promise<{ items: TokenRecord[]; total: number }> {
      const where = listed(q);
      const [items, count] = await Promise.all([
        db
          .selectFrom('tokens as t')
          .select(RECORD_COLUMNS)
          .where(where)
          .orderBy('t.created_at', 'desc')
          .orderBy('t.token_id', 'desc')
          .limit(q.limit)
          .offset(q.offset)
          .execute(),
        db
          .selectFrom('tokens as t')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where(where)
          .executeTakeFirstOrThrow(),
      ]);
      return { items: items.map(toRecord), total: Number(count.n) };
    },
    /** The ids of a user's tokens that are not revoked (expired ones included). */
    unrevokedIdsOf: async (username: string): Promise<string[]> =>
      (await db.selectFrom('tokens').select('token_id').where('username', '=', username).where('revoked_at', 'is', null).orderBy('token_id').execute()).map(
        (r) => r.token_id,
      ),
    /** Revokes a token; false if it was unknown or already revoked. */
    async revoke(tokenId: string, at: string): Promise<boolean> {
      const result = await db.updateTable('tokens').set({ revoked_at: at }).where('token_id', '=', tokenId).where('revoked_at', 'is', null).executeTakeFirst();
      return affected(result) === 1;
    },
    /**
     * Revokes every unrevoked token of a user but `keep`; returns the ids it revoked, in order.
     * Of peers revoking the same token at once, only one reports it.
     */
    async revokeAllOf(username: string, at: string, keep?: string): Promise<string[]> {
      let update = db.updateTable('tokens').set({ revoked_at: at }).where('username', '=', username).where('revoked_at', 'is', null);
      if (keep !== undefined) update = update.where('token_id', '<>', keep);
      const rows = await update.returning('token_id').execute();
      return rows.map((r) => r.token_id).sort();
    },
  };
}
export type TokenRepo = ReturnType<typeof createTokenRepo>;
