/** @module Users: the people and service accounts that hold tokens. */
import type { Db } from './db';
import type { Role } from '../roles';

export type UserKind = 'human' | 'service';

export interface User {
  username: string;
  role: Role | null;
  kind: UserKind;
  created_at: string;
}

export interface UserRow extends User {
  password_hash: string | null;
}

export function createUserRepo(db: Db) {
  const insert = db.prepare<[string, Role | null, UserKind, string | null, string]>(
    'INSERT INTO users (username, role, kind, password_hash, created_at) VALUES (?, ?, ?, ?, ?)',
  );
  const byName = db.prepare<[string], UserRow>('SELECT * FROM users WHERE username = ?');
  const all = db.prepare<[], User>('SELECT username, role, kind, created_at FROM users ORDER BY username');
  const count = db.prepare<[], { n: number }>('SELECT COUNT(*) AS n FROM users');

  return {
    /** Inserts a user; throws SQLITE_CONSTRAINT_PRIMARYKEY if the name exists. */
    insert(user: User, passwordHash: string | null): void {
      insert.run(user.username, user.role, user.kind, passwordHash, user.created_at);
    },
    get: (username: string): UserRow | undefined => byName.get(username),
    list: (): User[] => all.all(),
    count: (): number => count.get()!.n,
  };
}
export type UserRepo = ReturnType<typeof createUserRepo>;
