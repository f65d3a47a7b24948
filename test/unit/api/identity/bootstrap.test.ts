/**
 * The first start of an empty database (api/identity/bootstrap.ts) on a real store (SQLite, or
 * PostgreSQL) and a real directory: the `admin` service account and its token, written readable
 * by its owner only, and nothing at any later start, nor on a peer that starts at the same time.
 */
import { chmodSync, existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ADMIN_TOKEN_FILE, bootstrapAdmin } from '../../../../api/identity/bootstrap';
import { sha256Hex } from '../../../../shared/ids';
import { tempDir } from '../../../helpers/stack';
import { storeForEachTest } from '../../../helpers/store';

const T0 = Date.parse('2026-03-01T10:00:00.000Z');

describe('bootstrap', () => {
  const store = storeForEachTest();

  it('creates the administrator with a token of every scope and tenant, never expiring, in a file only its owner reads', async () => {
    const dir = tempDir();
    const file = await bootstrapAdmin(store, dir, undefined, () => T0);
    expect(file).toBe(join(dir, ADMIN_TOKEN_FILE));
    expect(statSync(file!).mode & 0o777).toBe(0o600);
    const token = readFileSync(file!, 'utf8').trim();
    expect(token).toMatch(/^tth_/);
    expect(await store.tokens.findByHash(sha256Hex(token))).toMatchObject({
      username: 'admin',
      role: 'administrator',
      kind: 'service',
      scopes: ['*'],
      tenants: ['*'],
      expires_at: null,
    });
  });

  it('does nothing once there is a user, and leaves the file as it is', async () => {
    const dir = tempDir();
    const file = (await bootstrapAdmin(store, dir, undefined, () => T0))!;
    const first = readFileSync(file, 'utf8');
    expect(await bootstrapAdmin(store, dir, undefined, () => T0)).toBeUndefined();
    expect(readFileSync(file, 'utf8')).toBe(first);
    expect(await store.users.count()).toBe(1);
  });

  it("takes the operator's bootstrap token, and narrows a stale file's mode", async () => {
    const dir = tempDir();
    writeFileSync(join(dir, ADMIN_TOKEN_FILE), 'stale\n');
    chmodSync(join(dir, ADMIN_TOKEN_FILE), 0o644);
    const file = (await bootstrapAdmin(store, dir, 'tth_chosen_by_the_operator', () => T0))!;
    expect(readFileSync(file, 'utf8')).toBe('tth_chosen_by_the_operator\n');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect((await store.tokens.findByHash(sha256Hex('tth_chosen_by_the_operator')))?.username).toBe('admin');
  });

  it('makes one administrator of peers starting together; the others keep no token file that admits no one', async () => {
    const dirs = [tempDir(), tempDir(), tempDir()];
    const files = await Promise.all(dirs.map((dir) => bootstrapAdmin(store, dir, undefined, () => T0)));
    const made = files.filter((f) => f !== undefined);
    expect(made).toHaveLength(1);
    expect(await store.users.count()).toBe(1);
    const token = readFileSync(made[0]!, 'utf8').trim();
    expect(await store.tokens.findByHash(sha256Hex(token))).toMatchObject({ username: 'admin' });
    for (const dir of dirs) {
      const file = join(dir, ADMIN_TOKEN_FILE);
      if (file !== made[0]) expect(existsSync(file)).toBe(false);
    }
  });
});
