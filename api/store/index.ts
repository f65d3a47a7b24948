/**
 * @module The API's storage: one database, SQLite or PostgreSQL (`./db`), and a repository per
 * table on it. Every repository method is asynchronous and runs on the database or inside a
 * transaction (`store.transaction`): rules that must hold across peers are the database's
 * (unique indexes, conditional updates, triggers), never a process's memory.
 */
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { createAccessRepo } from './access';
import { createAuditRepo } from './audit';
import { createBlobRepo } from './blobs';
import { openDatabase, type Db, type Dialect, type StoreLocation } from './db';
import { createDeviceRepo } from './devices';
import { createFleetRepo } from './fleet';
import { createIdempotencyRepo } from './idempotency';
import { createJobRepo } from './jobs';
import { createPeerRepo } from './peers';
import { createRateLimitRepo } from './rate-limits';
import { createRecordingRepo } from './recordings';
import type { Executor } from './schema';
import { createServiceRepo } from './services';
import { createSessionRepo } from './sessions';
import { createTokenRepo } from './tokens';
import { createUserRepo } from './users';

export { isUniqueViolation, isDatabaseUnavailable } from './errors';
export type { StoreLocation } from './db';

/** Every repository, on the database or on one transaction. */
export interface Repos {
  users: ReturnType<typeof createUserRepo>;
  tokens: ReturnType<typeof createTokenRepo>;
  devices: ReturnType<typeof createDeviceRepo>;
  sessions: ReturnType<typeof createSessionRepo>;
  audit: ReturnType<typeof createAuditRepo>;
  services: ReturnType<typeof createServiceRepo>;
  fleet: ReturnType<typeof createFleetRepo>;
  recordings: ReturnType<typeof createRecordingRepo>;
  idempotency: ReturnType<typeof createIdempotencyRepo>;
  peers: ReturnType<typeof createPeerRepo>;
  rateLimits: ReturnType<typeof createRateLimitRepo>;
  jobs: ReturnType<typeof createJobRepo>;
  blobs: ReturnType<typeof createBlobRepo>;
  access: ReturnType<typeof createAccessRepo>;
}

export interface Store extends Repos {
  dialect: Dialect;
  /** The query builder, for what no repository says (health checks, copies). */
  db: Executor;
  /** The SQLite connection (backups copy through it); undefined on PostgreSQL. */
  sqlite: Db | undefined;
  /** Runs `fn` in one transaction: every repository it is given commits together, or none does. */
  transaction<T>(fn: (tx: Repos) => Promise<T>): Promise<T>;
  /** A named random secret, created on first use and kept from then on (the same on every peer). */
  secret(name: string): Promise<Buffer>;
  /** Resolves when the database answers a trivial query. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** The secret named `name`: the first writer's value wins, on every peer. */
async function readSecret(db: Executor, name: string): Promise<Buffer> {
  await db
    .insertInto('secrets')
    .values({ name, value: randomBytes(32) })
    .onConflict((oc) => oc.column('name').doNothing())
    .execute();
  const row = await db.selectFrom('secrets').select('value').where('name', '=', name).executeTakeFirstOrThrow();
  return row.value;
}

function reposOn(db: Executor, dialect: Dialect, idempotencySecret: () => Promise<Buffer>): Repos {
  return {
    users: createUserRepo(db),
    tokens: createTokenRepo(db),
    devices: createDeviceRepo(db),
    sessions: createSessionRepo(db),
    audit: createAuditRepo(db),
    services: createServiceRepo(db),
    fleet: createFleetRepo(db),
    recordings: createRecordingRepo(db),
    idempotency: createIdempotencyRepo(db, idempotencySecret),
    peers: createPeerRepo(db),
    rateLimits: createRateLimitRepo(db, dialect),
    jobs: createJobRepo(db),
    blobs: createBlobRepo(db),
    access: createAccessRepo(db),
  };
}

/** Opens the database `location` names (creating and migrating it) and every repository on it. */
export async function openStore(location: StoreLocation | string): Promise<Store> {
  const opened = await openDatabase(typeof location === 'string' ? { dataDir: location } : location);
  const db = opened.kysely;
  const secrets = new Map<string, Promise<Buffer>>();
  const secret = (name: string): Promise<Buffer> => {
    let value = secrets.get(name);
    if (!value) {
      value = readSecret(db, name);
      secrets.set(name, value);
      value.catch(() => secrets.delete(name));
    }
    return value;
  };
  const idempotencySecret = () => secret('idempotency');
  return {
    ...reposOn(db, opened.dialect, idempotencySecret),
    dialect: opened.dialect,
    db,
    sqlite: opened.sqlite,
    transaction: (fn) => db.transaction().execute((trx) => fn(reposOn(trx, opened.dialect, idempotencySecret))),
    secret,
    async ping() {
      await sql`SELECT 1`.execute(db);
    },
    close: () => opened.close(),
  };
}
