/**
 * @module First start of an empty database: the `admin` service account (role administrator)
 * and one token for it with every scope and tenant, written to `<data dir>/admin.token` (0600).
 * The file is written before the account is committed, and the account and its token are
 * committed together (with their audit events, actor `system`), so a crash at any point leaves
 * either nothing or a usable token. Of peers starting together on one empty database, the first
 * to commit makes the account; the others make nothing, and take back a token file of their own
 * that would not work.
 */
import { chmodSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { newSecret, sha256Hex } from '../../shared/ids';
import { audited, eventsOf, recordAudit, systemSource } from '../audit/recorder';
import { isUniqueViolation, type Store } from '../store/index';
import { createIdentity, USER_TOKEN_PREFIX } from './identity';

export const ADMIN_USERNAME = 'admin';
export const ADMIN_TOKEN_FILE = 'admin.token';

/** True when `file` still holds `token` as written here. */
function stillHolds(file: string, token: string): boolean {
  try {
    return readFileSync(file, 'utf8') === `${token}\n`;
  } catch {
    return false;
  }
}

/** Creates the administrator if there are no users; resolves to the token file's path if it did. */
export async function bootstrapAdmin(store: Store, dataDir: string, bootstrapToken: string | undefined, now: () => number): Promise<string | undefined> {
  if ((await store.users.count()) > 0) return undefined;
  const token = bootstrapToken ?? newSecret(USER_TOKEN_PREFIX);
  const tokenFile = join(dataDir, ADMIN_TOKEN_FILE);
  writeFileSync(tokenFile, `${token}\n`, { mode: 0o600 });
  chmodSync(tokenFile, 0o600); // in case a stale file with a wider mode was there
  try {
    await audited(store, async (tx) => {
      const createdAt = new Date(now()).toISOString();
      await tx.users.insert({ username: ADMIN_USERNAME, role: 'administrator', kind: 'service', created_at: createdAt }, null);
      const issued = await createIdentity(tx, now).issueToken(ADMIN_USERNAME, { scopes: ['*'], tenants: ['*'], token });
      await recordAudit(
        tx.db,
        eventsOf(systemSource(), createdAt, [
          { event: 'user.created', target: { kind: 'user', id: ADMIN_USERNAME }, details: { role: 'administrator', kind: 'service', password: false } },
          {
            event: 'token.created',
            target: { kind: 'token', id: issued.token_id },
            details: { username: ADMIN_USERNAME, scopes: ['*'], tenants: ['*'], expires_at: null },
          },
        ]),
      );
    });
  } catch (err) {
    if (!isUniqueViolation(err)) throw err;
    // Another peer made the account first: our token works only if it is the one that peer
    // stored (the same TETHER_BOOTSTRAP_TOKEN). One that admits no one leaves the file, unless
    // a peer sharing this data dir has written its own there since.
    if (!(await store.tokens.findByHash(sha256Hex(token))) && stillHolds(tokenFile, token)) rmSync(tokenFile, { force: true });
    return undefined;
  }
  return tokenFile;
}
