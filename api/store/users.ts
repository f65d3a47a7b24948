/**
 * @module Users: the people and service accounts that hold tokens. A deleted user keeps its row
 * (`deleted_at`) so its name is never given to another account; every read here but `count`
 * treats it as gone. The database keeps an enabled administrator (SQLite's migration 6, and
 * PostgreSQL's trigger): see `isLastAdministratorViolation` in `./errors`.
 */
import { affected, type Executor, type Row } from './schema';
import type { Role } from '../roles';

export { isLastAdministratorViolation } from './errors';

export type UserKind = 'human' | 'service';

export interface User {
  username: string;
  role: Role | null;
  kind: UserKind;
  /** Suspended: its tokens are refused and its password login too. */
  disabled: boolean;
  created_at: string;
}

export interface UserRow extends User {
  password_hash: string | null;
}

/** What may change about a user; absent fields stay as they are. */
export interface UserChange {
  role?: Role | null | undefined;
  disabled?: boolean | undefined;
}

const COLUMNS = ['username', 'role', 'kind', 'disabled', 'password_hash', 'created_at'] as const;
type StoredUser = Pick<Row<'users'>, (typeof COLUMNS)[number]>;

const toUser = ({ disabled, role, kind, ...rest }: StoredUser): UserRow => ({
  ...rest,
  role: role as Role | null,
  kind: kind as UserKind,
  disabled: disabled === 1,
});
const withoutHash = ({ password_hash: _, ...user }: UserRow): User => user;

export function createUserRepo(db: Executor) {
  const live = () => db.selectFrom('users').where('deleted_at', 'is', null);
  return {
    /** Inserts an enabled user; throws a unique violation (`isUniqueViolation`) if the name exists or existed. */
    async insert(user: Omit<User, 'disabled'>, passwordHash: string | null): Promise<void> {
      await db
        .insertInto('users')
        .values({ username: user.username, role: user.role, kind: user.kind, password_hash: passwordHash, created_at: user.created_at })
        .execute();
    },
    async get(username: string): Promise<UserRow | undefined> {
      const row = await live().select(COLUMNS).where('username', '=', username).executeTakeFirst();
      return row && toUser(row);
    },
    list: async (): Promise<User[]> => (await live().select(COLUMNS).orderBy('username').execute()).map((row) => withoutHash(toUser(row))),
    /** Every user row ever made, deleted ones included (an empty database has none). */
    async count(): Promise<number> {
      const row = await db
        .selectFrom('users')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow();
      return Number(row.n);
    },
    /** True when a user of this name existed and was deleted. */
    wasDeleted: async (username: string): Promise<boolean> =>
      (await db.selectFrom('users').select('username').where('username', '=', username).where('deleted_at', 'is not', null).executeTakeFirst()) !== undefined,
    /**
     * Changes a user's role and/or disabled flag; undefined if there is no such user. Rejects
     * (see `isLastAdministratorViolation`) if no enabled administrator would be left.
     */
    async update(username: string, change: UserChange): Promise<User | undefined> {
      const row = await db
        .updateTable('users')
        .set((eb) => ({
          // An empty change still updates (the row as it is), so that it answers like any other.
          disabled: change.disabled === undefined ? eb.ref('disabled') : Number(change.disabled),
          ...(change.role !== undefined && { role: change.role }),
        }))
        .where('username', '=', username)
        .where('deleted_at', 'is', null)
        .returning(COLUMNS)
        .executeTakeFirst();
      return row && withoutHash(toUser(row));
    },
    /**
     * Marks a user deleted and forgets its password; false if there was no such user. Rejects
     * like `update` for the last enabled administrator.
     */
    async markDeleted(username: string, at: string): Promise<boolean> {
      const result = await db
        .updateTable('users')
        .set({ deleted_at: at, password_hash: null })
        .where('username', '=', username)
        .where('deleted_at', 'is', null)
        .executeTakeFirst();
      return affected(result) === 1;
    },
    /** Replaces a user's password hash; false if there is no such user. */
    async setPasswordHash(username: string, hash: string): Promise<boolean> {
      const result = await db
        .updateTable('users')
        .set({ password_hash: hash })
        .where('username', '=', username)
        .where('deleted_at', 'is', null)
        .executeTakeFirst();
      return affected(result) === 1;
    },
  };
}
export type UserRepo = ReturnType<typeof createUserRepo>;
