/**
 * @module `tether admin token` (docs/cli.md): a new administrator token written straight into the
 * database on the server host, for when `admin.token` is lost. It works while the server runs
 * (WAL lets both write; the server finds the new token on its first use) and while it does not.
 */
import { chmodSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ADMIN_TOKEN_FILE } from '../api/identity/bootstrap';
import { createIdentity } from '../api/identity/identity';
import { LATEST_SCHEMA, schemaVersionOf } from '../api/store/backup';
import { openStore, type Store } from '../api/store/index';
import { CliError } from '../cli/errors';
import { asCommandError, existingDatabase } from './backup';

/** The administrators that may be named, for the message when the one asked for is not. */
function administrators(store: Store): string {
  const names = store.users
    .list()
    .filter((u) => u.role === 'administrator' && !u.disabled)
    .map((u) => u.username);
  return names.length > 0 ? `; administrators: ${names.join(', ')}` : '';
}

/** Checked before opening the store, because opening it would migrate it under a running server. */
function requireCurrentSchema(dataDir: string): void {
  let version: number;
  try {
    version = schemaVersionOf(existingDatabase(dataDir));
  } catch (err) {
    throw asCommandError(err);
  }
  if (version !== LATEST_SCHEMA) {
    throw new CliError(
      `the database in ${dataDir} has schema version ${version} and this tether ${LATEST_SCHEMA}: run the tether of the same version as the server`,
      'schema_mismatch',
    );
  }
}

/**
 * Issues `username` (an enabled administrator) a token with every scope and tenant, lasting as
 * long as its kind allows (a service account's: no expiry), and writes it to `out` (mode 0600).
 */
export function issueAdminToken(dataDir: string, username: string, out: string | undefined, print: (line: string) => void): void {
  requireCurrentSchema(dataDir);
  const store = openStore(dataDir);
  try {
    const user = store.users.get(username);
    if (!user || user.role !== 'administrator' || user.disabled) {
      throw new CliError(`${username} is not an enabled administrator${administrators(store)} (--username picks one)`, 'not_found');
    }
    const issued = createIdentity(store, Date.now).issueToken(username, { scopes: ['*'], tenants: ['*'] });
    const file = resolve(out ?? join(dataDir, ADMIN_TOKEN_FILE));
    writeFileSync(file, `${issued.token}\n`, { mode: 0o600 });
    chmodSync(file, 0o600); // in case a file with a wider mode was there
    const lasts = issued.expires_at === null ? 'no expiry' : `expires ${issued.expires_at}`;
    print(`issued token ${issued.token_id} for ${username} (administrator, every scope and tenant, ${lasts}); it is in ${file}`);
  } finally {
    store.close();
  }
}
