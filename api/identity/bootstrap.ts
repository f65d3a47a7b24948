/**
 * @module First start of an empty data dir: the `admin` service account (role administrator)
 * and one token for it with every scope and tenant, written to `<data dir>/admin.token` (0600).
 * The file is written before the account is committed, and the account and its token are
 * committed together, so a crash at any point leaves either nothing or a usable token.
 */
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { newSecret } from '../../shared/ids';
import type { Store } from '../store/index';
import { USER_TOKEN_PREFIX, type Identity } from './identity';

export const ADMIN_USERNAME = 'admin';
export const ADMIN_TOKEN_FILE = 'admin.token';

/** Creates the administrator if there are no users; returns the token file's path if it did. */
export function bootstrapAdmin(store: Store, identity: Identity, dataDir: string, bootstrapToken: string | undefined, now: () => number): string | undefined {
  if (store.users.count() > 0) return undefined;
  const token = bootstrapToken ?? newSecret(USER_TOKEN_PREFIX);
  const tokenFile = join(dataDir, ADMIN_TOKEN_FILE);
  writeFileSync(tokenFile, `${token}\n`, { mode: 0o600 });
  chmodSync(tokenFile, 0o600); // in case a stale file with a wider mode was there
  store.db.transaction(() => {
    const createdAt = new Date(now()).toISOString();
    store.users.insert({ username: ADMIN_USERNAME, role: 'administrator', kind: 'service', created_at: createdAt }, null);
    identity.issueToken(ADMIN_USERNAME, { scopes: ['*'], tenants: ['*'], token });
  })();
  return tokenFile;
}
