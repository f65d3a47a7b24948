/**
 * @module Users: the people and service accounts that hold tokens. A deleted user keeps its row
 * (`deleted_at`) so its name is never given to another account; every read here but `count`
 * treats it as gone. The database keeps an enabled administrator (migration 6).
 */
import type { Db } from './db';
import type { Role } from '../roles';

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

interface StoredUser extends Omit<UserRow, 'disabled'> {
  disabled: number;
}

const toUser = ({ disabled, ...rest }: StoredUser): UserRow => ({ ...rest, disabled: disabled === 1 });
const withoutHash = ({ password_hash: _, ...user }: UserRow): User => user;

/** The message of migration 6's triggers: the change would leave no enabled administrator. */
const LAST_ADMINISTRATOR = 'last enabled administrator';

/** True when `err` is the database refusing to lose its last enabled administrator. */
export function isLastAdministratorViolation(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | null;
  return e?.code === 'SQLITE_CONSTRAINT_TRIGGER' && e.message === LAST_ADMINISTRATOR;
}

export function createUserRepo(db: Db) {
  const columns = 'username, role, kind, disabled, password_hash, created_at';
  const insert = db.prepare<[string, Role | null, UserKind, string | null, string]>(
    'INSERT INTO users (username, role, kind, password_hash, created_at) VALUES (?, ?, ?, ?, ?)',
  );
  const byName = db.prepare<[string], StoredUser>(`SELECT ${columns} FROM users WHERE username = ? AND deleted_at IS NULL`);
  const all = db.prepare<[], StoredUser>(`SELECT ${columns} FROM users WHERE deleted_at IS NULL ORDER BY username`);
  const count = db.prepare<[], { n: number }>('SELECT COUNT(*) AS n FROM users');
  const deleted = db.prepare<[string], { n: number }>('SELECT 1 AS n FROM users WHERE username = ? AND deleted_at IS NOT NULL');
  const update = db.prepare<{ username: string; set_role: number; role: Role | null; disabled: number | null }, StoredUser>(
    `UPDATE users SET role = CASE WHEN @set_role = 1 THEN @role ELSE role END, disabled = COALESCE(@disabled, disabled)
      WHERE username = @username AND deleted_at IS NULL
     RETURNING ${columns}`,
  );
  const markDeleted = db.prepare<[string, string]>('UPDATE users SET deleted_at = ?, password_hash = NULL WHERE username = ? AND deleted_at IS NULL');
  const setPassword = db.prepare<[string, string]>('UPDATE users SET password_hash = ? WHERE username = ? AND deleted_at IS NULL');

  return {
    /** Inserts an enabled user; throws SQLITE_CONSTRAINT_PRIMARYKEY if the name exists or existed. */
    insert(user: Omit<User, 'disabled'>, passwordHash: string | null): void {
      insert.run(user.username, user.role, user.kind, passwordHash, user.created_at);
    },
    get(username: string): UserRow | undefined {
      const row = byName.get(username);
      return row && toUser(row);
    },
    list: (): User[] => all.all().map((row) => withoutHash(toUser(row))),
    /** Every user row ever made, deleted ones included (an empty database has none). */
    count: (): number => count.get()!.n,
    /** True when a user of this name existed and was deleted. */
    wasDeleted: (username: string): boolean => deleted.get(username) !== undefined,
    /**
     * Changes a user's role and/or disabled flag; undefined if there is no such user. Throws
     * (see `isLastAdministratorViolation`) if no enabled administrator would be left.
     */
    update(username: string, change: UserChange): User | undefined {
      const row = update.get({
        username,
        set_role: change.role === undefined ? 0 : 1,
        role: change.role ?? null,
        disabled: change.disabled === undefined ? null : Number(change.disabled),
      });
      return row && withoutHash(toUser(row));
    },
    /**
     * Marks a user deleted and forgets its password; false if there was no such user. Throws
     * like `update` for the last enabled administrator.
     */
    markDeleted: (username: string, at: string): boolean => markDeleted.run(at, username).changes === 1,
    /** Replaces a user's password hash; false if there is no such user. */
    setPasswordHash: (username: string, hash: string): boolean => setPassword.run(hash, username).changes === 1,
  };
}
export type UserRepo = ReturnType<typeof createUserRepo>;
