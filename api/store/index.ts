/** @module The API's storage: one database and a repository per table, statements prepared once. */
import { randomBytes } from 'node:crypto';
import { createAuditRepo } from './audit';
import { openDatabase, type Db } from './db';
import { createDeviceRepo } from './devices';
import { createFleetRepo } from './fleet';
import { createIdempotencyRepo } from './idempotency';
import { createRecordingRepo } from './recordings';
import { createServiceRepo } from './services';
import { createSessionRepo } from './sessions';
import { createTokenRepo } from './tokens';
import { createUserRepo } from './users';

export interface Store {
  db: Db;
  users: ReturnType<typeof createUserRepo>;
  tokens: ReturnType<typeof createTokenRepo>;
  devices: ReturnType<typeof createDeviceRepo>;
  sessions: ReturnType<typeof createSessionRepo>;
  audit: ReturnType<typeof createAuditRepo>;
  services: ReturnType<typeof createServiceRepo>;
  fleet: ReturnType<typeof createFleetRepo>;
  recordings: ReturnType<typeof createRecordingRepo>;
  idempotency: ReturnType<typeof createIdempotencyRepo>;
  /** A named random secret, created on first use and kept from then on. */
  secret(name: string): Buffer;
  close(): void;
}

/** Opens the database in `dataDir` and prepares every repository. */
export function openStore(dataDir: string): Store {
  const db = openDatabase(dataDir);
  const secret = (name: string): Buffer => {
    db.prepare('INSERT OR IGNORE INTO secrets (name, value) VALUES (?, ?)').run(name, randomBytes(32));
    return (db.prepare('SELECT value FROM secrets WHERE name = ?').get(name) as { value: Buffer }).value;
  };
  let idempotencySecret: Buffer | undefined;
  return {
    db,
    users: createUserRepo(db),
    tokens: createTokenRepo(db),
    devices: createDeviceRepo(db),
    sessions: createSessionRepo(db),
    audit: createAuditRepo(db),
    services: createServiceRepo(db),
    fleet: createFleetRepo(db),
    recordings: createRecordingRepo(db),
    idempotency: createIdempotencyRepo(db, () => (idempotencySecret ??= secret('idempotency'))),
    secret,
    close: () => db.close(),
  };
}

/** True when `err` is SQLite's complaint about a UNIQUE or PRIMARY KEY constraint. */
export function isUniqueViolation(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}
