/**
 * `tether admin token` on the server host (docs/cli.md): a lost admin.token replaced straight in
 * the database while the server runs; the new token works over HTTP at once.
 */
import Database from 'better-sqlite3';
import { existsSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LATEST_SCHEMA } from '../../api/store/backup';
import { client } from '../helpers/http';
import { runTether, startServerProcess } from '../helpers/processes';
import { tempDir } from '../helpers/stack';
import { onPostgres, storeEnvFor } from '../helpers/store';

/** `tether ARGS` against the store of the server whose data dir is `dataDir` (its TETHER_DATABASE_URL on PostgreSQL). */
const run = async (args: string[], dataDir: string) => runTether(args, await storeEnvFor(dataDir));

describe('tether admin token', () => {
  it('issues a working administrator token while the server runs', async () => {
    const dataDir = tempDir();
    const { proc, url } = await startServerProcess(dataDir);
    const tokenFile = join(dataDir, 'admin.token');
    const old = readFileSync(tokenFile, 'utf8').trim();
    rmSync(tokenFile); // lost

    const issued = await run(['admin', 'token', '--data-dir', dataDir], dataDir);
    expect(issued).toMatchObject({ code: 0, stderr: '' });
    expect(issued.stdout).toMatch(
      new RegExp(`^issued token tok_\\w+ for admin \\(administrator, every scope and tenant, no expiry\\); it is in ${tokenFile}$`),
    );
    expect((statSync(tokenFile).mode & 0o777).toString(8)).toBe('600');
    const token = readFileSync(tokenFile, 'utf8').trim();
    expect(token).not.toBe(old);

    const me = await client(url, token).get('/v1/me');
    expect(me.status).toBe(200);
    expect(me.body.data).toMatchObject({ username: 'admin', role: 'administrator', scopes: ['*'], tenants: ['*'], expires_at: null });
    expect(issued.stdout).toContain(me.body.data.token_id);
    // it can do what an administrator does, and the old token still works too
    expect((await client(url, token).post('/v1/users', { username: 'ops', role: 'administrator' })).status).toBe(201);
    expect((await client(url, old).get('/v1/me')).status).toBe(200);

    // another administrator, by name, to a file of its own: a person's token lives 8 hours
    const out = join(tempDir(), 'ops.token');
    const named = await run(['admin', 'token', '--data-dir', dataDir, '--username', 'ops', '--out', out], dataDir);
    expect(named.code).toBe(0);
    expect(named.stdout).toMatch(/for ops \(administrator, every scope and tenant, expires \d{4}-.+\); it is in /);
    expect((await client(url, readFileSync(out, 'utf8').trim()).get('/v1/me')).body.data.username).toBe('ops');
    // each token issued on the host is in the audit log, by the system
    const audit = await client(url, token).get('/v1/audit/events?event=token.created&actor=system');
    expect(audit.body.data.map((e: { target: { id: string } }) => e.target.id)).toEqual(expect.arrayContaining([me.body.data.token_id]));
    await proc.stop();
  });

  it('refuses a user who is not an administrator, a database of another version, and a data dir without one', async () => {
    const dataDir = tempDir();
    const { proc, url } = await startServerProcess(dataDir);
    const admin = client(url, readFileSync(join(dataDir, 'admin.token'), 'utf8').trim());
    expect((await admin.post('/v1/users', { username: 'dev', role: 'developer' })).status).toBe(201);
    const refused = await run(['admin', 'token', '--data-dir', dataDir, '--username', 'dev'], dataDir);
    expect(refused).toMatchObject({ code: 1, stdout: '' });
    expect(refused.stderr).toBe('tether: dev is not an enabled administrator; administrators: admin (--username picks one)');
    await proc.stop();

    // On SQLite (the data dir's own file): a database of another schema version is left alone
    // (opening it would migrate it), and a data dir without one is refused.
    if (onPostgres) return;
    const db = new Database(join(dataDir, 'tether.db'));
    db.pragma(`user_version = ${LATEST_SCHEMA - 1}`);
    db.close();
    const other = await runTether(['admin', 'token', '--data-dir', dataDir]);
    expect(other.code).toBe(1);
    expect(other.stderr).toBe(
      `tether: the database in ${dataDir} has schema version ${LATEST_SCHEMA - 1} and this tether ${LATEST_SCHEMA}: run the tether of the same version as the server`,
    );
    const after = new Database(join(dataDir, 'tether.db'), { readonly: true });
    expect(after.pragma('user_version', { simple: true })).toBe(LATEST_SCHEMA - 1);
    after.close();

    const nowhere = join(tempDir(), 'nowhere');
    const missing = await runTether(['admin', 'token', '--data-dir', nowhere]);
    expect(missing).toMatchObject({ code: 1, stderr: `tether: no tether database in ${nowhere} (set --data-dir, or TETHER_DATA_DIR)` });
    expect(existsSync(nowhere)).toBe(false);
  });
});
