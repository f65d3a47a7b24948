/**
 * The first start of an empty data dir (api/identity/bootstrap.ts) on a real SQLite store and a
 * real directory: the `admin` service account and its token, written readable by its owner only,
 * and nothing at any later start.
 */
import { chmodSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ADMIN_TOKEN_FILE, bootstrapAdmin } from '../../../../api/identity/bootstrap';
import { createIdentity } from '../../../../api/identity/identity';
import { sha256Hex } from '../../../../shared/ids';
import { tempDir } from '../../../helpers/stack';
import { storeForEachTest } from '../../../helpers/store';

const T0 = Date.parse('2026-03-01T10:00:00.000Z');

describe('bootstrap', () => {
  const store = storeForEachTest();
  const identity = () => createIdentity(store, () => T0);

  it('creates the administrator with a token of every scope and tenant, never expiring, in a file only its owner reads', () => {
    const dir = tempDir();
    const file = bootstrapAdmin(store, identity(), dir, undefined, () => T0);
    expect(file).toBe(join(dir, ADMIN_TOKEN_FILE));
    expect(statSync(file!).mode & 0o777).toBe(0o600);
    const token = readFileSync(file!, 'utf8').trim();
    expect(token).toMatch(/^tth_/);
    expect(store.tokens.findByHash(sha256Hex(token))).toMatchObject({
      username: 'admin',
      role: 'administrator',
      kind: 'service',
      scopes: ['*'],
      tenants: ['*'],
      expires_at: null,
    });
  });

  it('does nothing once there is a user, and leaves the file as it is', () => {
    const dir = tempDir();
    const file = bootstrapAdmin(store, identity(), dir, undefined, () => T0)!;
    const first = readFileSync(file, 'utf8');
    expect(bootstrapAdmin(store, identity(), dir, undefined, () => T0)).toBeUndefined();
    expect(readFileSync(file, 'utf8')).toBe(first);
    expect(store.users.count()).toBe(1);
  });

  it("takes the operator's bootstrap token, and narrows a stale file's mode", () => {
    const dir = tempDir();
    writeFileSync(join(dir, ADMIN_TOKEN_FILE), 'stale\n');
    chmodSync(join(dir, ADMIN_TOKEN_FILE), 0o644);
    const file = bootstrapAdmin(store, identity(), dir, 'tth_chosen_by_the_operator', () => T0)!;
    expect(readFileSync(file, 'utf8')).toBe('tth_chosen_by_the_operator\n');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(store.tokens.findByHash(sha256Hex('tth_chosen_by_the_operator'))?.username).toBe('admin');
  });
});
