/**
 * @module `tether admin token` (docs/cli.md): a new administrator token written straight into the
 * database on the server host, for when `admin.token` is lost. It works while the server runs
 * (WAL lets both write; the server finds the new token on its first use) and while it does not.
 * The database is the server's: PostgreSQL when TETHER_DATABASE_URL is set (read from the
 * environment, as the server reads it), else `<data dir>/tether.db`.
 */
import { chmodSync, existsSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { ADMIN_TOKEN_FILE } from '../api/identity/bootstrap';
import { systemSource } from '../api/audit/recorder';
import { createAuditedIdentity } from '../api/identity/audited';
import { LATEST_SCHEMA, schemaVersionOf } from '../api/store/backup';
import { postgresSchemaVersion } from '../api/store/copy';
import { openStore, type Store } from '../api/store/index';
import { CliError } from '../cli/errors';
import { asCommandError, existingDatabase } from './backup';
import { checkPostgresUrl, connectPostgres, shownUrl } from './db-copy';

/** The administrators that may be named, for the message when the one asked for is not. */
async function administrators(store: Store): Promise<string> {
  const names = (await store.users.list()).filter((u) => u.role === 'administrator' && !u.disabled).map((u) => u.username);
  return names.length > 0 ? `; administrators: ${names.join(', ')}` : '';
}

const mismatch = (where: string, version: number) =>
  new CliError(
    `the database ${where} has schema version ${version} and this tether ${LATEST_SCHEMA}: run the tether of the same version as the server`,
    'schema_mismatch',
  );

/** Checked before opening the store, because opening it would migrate it under a running server. */
function requireCurrentSchema(dataDir: string): void {
  let version: number;
  try {
    version = schemaVersionOf(existingDatabase(dataDir));
  } catch (err) {
    throw asCommandError(err);
  }
  if (version !== LATEST_SCHEMA) throw mismatch(`in ${dataDir}`, version);
}

/** As requireCurrentSchema, for the PostgreSQL database at `url`. */
async function requireCurrentPostgresSchema(url: string): Promise<void> {
  checkPostgresUrl(url, 'TETHER_DATABASE_URL');
  const pool = await connectPostgres(url);
  let version: number | undefined;
  try {
    version = await postgresSchemaVersion(pool);
  } finally {
    await pool.end();
  }
  if (version === undefined) {
    throw new CliError(
      `no tether database at ${shownUrl(url)} (TETHER_DATABASE_URL): start tether server on it first, or fill it with tether db copy`,
      'not_found',
    );
  }
  if (version !== LATEST_SCHEMA) throw mismatch(`at ${shownUrl(url)}`, version);
}

/**
 * Issues `username` (an enabled administrator) a token with every scope and tenant, lasting as
 * long as its kind allows (a service account's: no expiry), and writes it to `out` (mode 0600).
 */
export async function issueAdminToken(
  dataDir: string,
  username: string,
  out: string | undefined,
  print: (line: string) => void,
  env: NodeJS.ProcessEnv = process.env,
): Promise<void> {
  const databaseUrl = env.TETHER_DATABASE_URL || undefined;
  if (databaseUrl) await requireCurrentPostgresSchema(databaseUrl);
  else requireCurrentSchema(dataDir);
  const file = resolve(out ?? join(dataDir, ADMIN_TOKEN_FILE));
  // Before the token exists: one that cannot be written would be issued for nothing.
  if (!existsSync(dirname(file))) throw new CliError(`${dirname(file)}: no such directory to write the token to (--out FILE puts it elsewhere)`, 'local_file');
  const store = await openStore({ dataDir, databaseUrl });
  try {
    const user = await store.users.get(username);
    if (!user || user.role !== 'administrator' || user.disabled) {
      throw new CliError(`${username} is not an enabled administrator${await administrators(store)} (--username picks one)`, 'not_found');
    }
    const issued = await createAuditedIdentity(store, Date.now).issueToken(username, { scopes: ['*'], tenants: ['*'] }, undefined, systemSource());
    writeFileSync(file, `${issued.token}\n`, { mode: 0o600 });
    chmodSync(file, 0o600); // in case a file with a wider mode was there
    const lasts = issued.expires_at === null ? 'no expiry' : `expires ${issued.expires_at}`;
    print(`issued token ${issued.token_id} for ${username} (administrator, every scope and tenant, ${lasts}); it is in ${file}`);
  } finally {
    await store.close();
  }
}
