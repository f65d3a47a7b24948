/**
 * `tether db copy` (docs/cli.md, CONTRACT 10.1): a real SQLite installation, copied by the real
 * CLI into a PostgreSQL server of this file's own, then served from there by a real `tether
 * server`: tokens, passwords, agent tokens, stream tickets, idempotency replays, sessions, audit,
 * services and the fleet keep working. A non-empty target is refused, a dry run writes nothing, a
 * copy that fails midway leaves no row behind, and a target that does not hold what the source
 * does fails the verification. Every store is named here, so the file runs the same in both
 * vitest projects.
 */
import Database from 'better-sqlite3';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPostgres, type Postgres } from '../../bench/postgres';
import { NOT_COPIED } from '../../api/store/copy';
import { LATEST_SCHEMA, migrate, openDatabase } from '../../api/store/db';
import { sqliteMigrations } from '../../api/store/migrations/sqlite/index';
import { openStore } from '../../api/store/index';
import { TABLES } from '../../api/store/schema';
import { STREAM_CLOSE } from '../../shared/protocol/session-stream';
import { client } from '../helpers/http';
import { runTether, startProcess } from '../helpers/processes';
import { serviceSpec } from '../helpers/service-spec';
import { startStack, tempDir } from '../helpers/stack';
import { connectStream } from '../helpers/stream';
import { waitFor } from '../helpers/wait';

let postgres: Postgres;
beforeAll(async () => {
  postgres = await startPostgres();
}, 60_000);
afterAll(() => postgres?.close());

const COPIED = TABLES.filter((t) => !NOT_COPIED[t]);
const PASSWORD = 'correct-horse-battery-staple-7';
const VIN = (n: number) => `1HGCM82633A${String(n).padStart(6, '0')}`;

/** `tether db copy ARGS`, never on a store named by the environment, its snapshot in a temp dir of its own (left empty). */
async function dbCopy(args: string[]) {
  const tmp = tempDir('tether-db-copy-tmp-');
  const result = await runTether(['db', 'copy', ...args], { TETHER_DATABASE_URL: undefined, TMPDIR: tmp });
  expect(readdirSync(tmp), 'the snapshot is removed').toEqual([]);
  return result;
}

async function withClient<T>(url: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

/** A real `tether server` on the PostgreSQL database at `url`. */
async function serverOn(dataDir: string, url: string) {
  const env = { TETHER_LISTEN: '127.0.0.1:0', TETHER_DATA_DIR: dataDir, TETHER_DATABASE_URL: url };
  const proc = startProcess(['server'], env);
  const line = await proc.waitForLine(/^tether listening on /, 20_000);
  return { proc, url: line.replace('tether listening on ', '') };
}

/** Rows per tether table in the PostgreSQL database at `url`. */
const pgCounts = (url: string) =>
  withClient(url, async (c) => {
    const counts: Record<string, number> = {};
    for (const t of TABLES) counts[t] = Number((await c.query(`SELECT count(*) AS n FROM ${t}`)).rows[0].n);
    return counts;
  });

/** Relations of any kind in the database's public schema. */
const relations = (url: string) =>
  withClient(url, async (c) => (await c.query("SELECT relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE nspname = 'public'")).rows);

/** Rows per tether table in the SQLite database of `dataDir` (read while a server may run on it). */
function sqliteCounts(dataDir: string): Record<string, number> {
  const db = new Database(join(dataDir, 'tether.db'), { readonly: true });
  try {
    return Object.fromEntries(TABLES.map((t) => [t, Number(db.prepare(`SELECT count(*) FROM ${t}`).pluck().get())]));
  } finally {
    db.close();
  }
}

/** The SOURCE and TARGET columns of the command's table, by table. */
function printedCounts(stdout: string): Record<string, { source: number; target: number }> {
  const counts: Record<string, { source: number; target: number }> = {};
  for (const line of stdout.split('\n')) {
    const m = /^(\w+)\s+(\d+)\s+(\d+)\s+[0-9a-f]{16} \(same\)$/.exec(line);
    if (m) counts[m[1]!] = { source: Number(m[2]), target: Number(m[3]) };
  }
  return counts;
}

describe('tether db copy', () => {
  it('moves a running SQLite installation to PostgreSQL, where everything keeps working', async () => {
    const stack = await startStack({ dataDir: tempDir(), env: { TETHER_DATABASE_URL: '' } });
    expect(existsSync(join(stack.dataDir, 'tether.db')), 'the source is SQLite').toBe(true);
    const { admin } = stack;
    const acme = { 'x-tenant-id': 'acme' };
    expect((await admin.post('/v1/users', { username: 'alice', role: 'developer', password: PASSWORD })).status).toBe(201);
    const bob = await stack.userToken('bob', 'platform-engineer');
    const { token: agentToken } = await stack.onlineDevice('van-7');
    const spare = await admin.post('/v1/devices', { device_id: 'spare-1' }, { 'idempotency-key': 'spare-1-once' });
    expect(spare.status).toBe(201);
    const closed = (await admin.post('/v1/remote-access/sessions', { device_id: 'van-7', protocol: 'diagnostics' })).body.data;
    expect((await admin.del(`/v1/remote-access/sessions/${closed.session_id}`)).status).toBe(200);
    const open = (await admin.post('/v1/remote-access/sessions', { device_id: 'van-7', protocol: 'shell' })).body.data;
    expect(open.status).toBe('open');
    const deployed = await admin.raw('POST', '/v1/services?env=dev', serviceSpec({ name: 'web' }), { 'content-type': 'application/yaml' });
    expect(deployed.status).toBe(200);
    const group = (await admin.post('/v1/fleet/groups', { name: 'Berlin Vans', description: 'Lieferwagen – Zürich 🚐' }, acme)).body.data;
    const vehicle = (await admin.post('/v1/fleet/vehicles', { vin: VIN(1), device_id: 'van-7' }, acme)).body.data;
    expect((await admin.put(`/v1/fleet/vehicles/${vehicle.vehicle_id}/group`, { group_id: group.group_id }, acme)).status).toBe(200);
    // A job that waits for a device that never comes online, and a blob (in chunks, bytes).
    const blob = (await admin.raw('POST', '/v1/blobs', 'payload ✓', { 'content-type': 'application/octet-stream' })).body.data;
    const job = await admin.post('/v1/jobs', { kind: 'file-push', target: { device_ids: ['spare-1'] }, blob_id: blob.blob_id, path: 'p.txt' });
    expect(job.status, job.text).toBe(201);

    const listings = async (c: ReturnType<typeof client>) => ({
      users: (await c.get('/v1/users')).body.data,
      audit: (await c.get('/v1/audit/remote-access?per_page=100')).body.data,
      deployments: (await c.get('/v1/audit/deployments')).body.data,
      revisions: (await c.get('/v1/services/web/revisions?env=dev')).body.data,
      groups: (await c.get('/v1/fleet/groups', acme)).body.data,
      vehicles: (await c.get(`/v1/fleet/groups/${group.group_id}/vehicles`, acme)).body.data,
      closed: (await c.get(`/v1/remote-access/sessions/${closed.session_id}`)).body.data,
      jobs: (await c.get('/v1/jobs')).body.data,
      executions: (await c.get(`/v1/jobs/${job.body.data.job_id}/executions`)).body.data,
      blob: (await c.get(`/v1/blobs/${blob.blob_id}`)).body.data,
    });
    const before = await listings(admin);
    expect(before.audit.length).toBeGreaterThanOrEqual(3);

    // Both ends are checked and nothing is written by a dry run.
    const url = await postgres.createDatabase();
    const dry = await dbCopy(['--from', stack.dataDir, '--to', url, '--dry-run']);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toMatch(/^target postgres:\/\/postgres@127\.0\.0\.1:\d+\/\w+: reachable, empty, no tether schema yet/m);
    expect(dry.stdout).toMatch(/^users\s+3\s+would be copied$/m);
    expect(dry.stdout).toMatch(/^peers\s+\d+\s+not copied: runtime state/m);
    expect(dry.stdout).toMatch(/^dry run: would copy \d+ rows in 23 tables; nothing was written$/m);
    expect(await relations(url)).toEqual([]);

    // The copy, from the database the server is still writing to (heartbeats, replicas).
    const source = sqliteCounts(stack.dataDir);
    const copy = await dbCopy(['--from', stack.dataDir, '--to', url]);
    expect(copy.code, copy.stderr).toBe(0);
    expect(copy.stderr).toMatch(/^copying audit_events: (\d+)\/\1 rows$/m);
    const printed = printedCounts(copy.stdout);
    expect(Object.keys(printed).sort()).toEqual([...COPIED].sort());
    for (const t of COPIED) expect(printed[t], t).toEqual({ source: source[t], target: source[t] });
    expect(copy.stdout).toMatch(/^peers\s+\d+\s+-\s+not copied: runtime state/m);
    expect(copy.stdout).toMatch(/verified: every table's row count and SHA-256 match the source$/);
    const target = await pgCounts(url);
    for (const t of COPIED) expect(target[t], t).toBe(source[t]);
    expect(target).toMatchObject({ peers: 0, rate_limit_hits: 0, users: 3, sessions: 2 });
    await stack.stop();

    // A server on PostgreSQL: no new administrator (the copied one is there), the same tokens.
    const dataDir = tempDir();
    const server = await serverOn(dataDir, url);
    expect(existsSync(join(dataDir, 'admin.token'))).toBe(false);
    const pgAdmin = client(server.url, stack.adminToken);
    expect((await pgAdmin.get('/v1/me')).body.data).toMatchObject({ username: 'admin', role: 'administrator' });
    expect((await client(server.url, bob).get('/v1/me')).body.data).toMatchObject({ username: 'bob', role: 'platform-engineer' });
    const login = await client(server.url).post('/v1/auth/token', { username: 'alice', password: PASSWORD });
    expect(login.status).toBe(200);
    expect((await client(server.url, login.body.data.token).get('/v1/me')).body.data.username).toBe('alice');

    // The agent token still lets the device in; the sealed idempotent reply still opens.
    startProcess(['agent', '--server', server.url, '--device-id', 'van-7'], { TETHER_DEVICE_TOKEN: agentToken });
    await waitFor(async () => (await pgAdmin.get('/v1/devices/van-7')).body.data.agent_status === 'online', 'van-7 online on PostgreSQL');
    const replay = await pgAdmin.post('/v1/devices', { device_id: 'spare-1' }, { 'idempotency-key': 'spare-1-once' });
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body.data.agent_token).toBe(spare.body.data.agent_token);

    // The listings hold what the SQLite server showed; the session left open was closed at the
    // server's start (one server alone), its audit event numbered after the copied ones.
    const after = await listings(pgAdmin);
    expect(after.users).toEqual(before.users);
    expect(after.deployments).toEqual(before.deployments);
    expect(after.revisions).toEqual(before.revisions);
    expect(after.groups).toEqual(before.groups);
    expect(after.vehicles).toEqual(before.vehicles);
    expect(after.closed).toEqual(before.closed);
    expect(after.jobs).toEqual(before.jobs);
    expect(after.executions).toEqual(before.executions);
    expect(after.blob).toEqual(before.blob);
    expect(after.audit).toEqual(expect.arrayContaining(before.audit));
    expect(after.audit.filter((e: { session_id: string }) => e.session_id === open.session_id).map((e: { event: string }) => e.event)).toEqual(
      expect.arrayContaining(['session.opened', 'session.closed']),
    );
    expect((await pgAdmin.get(`/v1/remote-access/sessions/${open.session_id}`)).body.data).toMatchObject({ status: 'closed', close_reason: 'server_shutdown' });
    expect(after.groups.groups[0].description).toBe('Lieferwagen – Zürich 🚐');
    const sessions = (await pgAdmin.get('/v1/remote-access/sessions')).body.data.map((x: { session_id: string }) => x.session_id);
    expect(sessions).toEqual(expect.arrayContaining([closed.session_id, open.session_id]));
    expect((await pgAdmin.get('/v1/devices')).body.data.map((d: { device_id: string }) => d.device_id).sort()).toEqual(['spare-1', 'van-7']);
    // New rows with identities: audit of a new session, a deployment.
    const fresh = await pgAdmin.post('/v1/remote-access/sessions', { device_id: 'van-7', protocol: 'diagnostics' });
    expect(fresh.status).toBe(201);
    expect((await pgAdmin.del(`/v1/remote-access/sessions/${fresh.body.data.session_id}`)).status).toBe(200);
    const redeploy = await pgAdmin.raw('POST', '/v1/services?env=dev', serviceSpec({ name: 'web', tag: 'v1.1.0' }), { 'content-type': 'application/yaml' });
    expect(redeploy.status).toBe(200);

    // The stream ticket of the copied session is genuine there (closed, not a bad ticket).
    const ws = new URL(open.websocket_url as string);
    const wsBase = `${server.url.replace(/^http/, 'ws')}${ws.pathname}`;
    expect((await connectStream(`${wsBase}${ws.search}`).closed).code).toBe(STREAM_CLOSE.sessionClosed);
    expect((await connectStream(`${wsBase}${ws.search}x`).closed).code).toBe(STREAM_CLOSE.unknownSession);

    // tether admin token works on the PostgreSQL installation (TETHER_DATABASE_URL).
    const issued = await runTether(['admin', 'token', '--data-dir', dataDir], { TETHER_DATABASE_URL: url });
    expect(issued.code, issued.stderr).toBe(0);
    expect(issued.stdout).toMatch(/^issued token tok_\w+ for admin /);
    expect((await client(server.url, readFileSync(join(dataDir, 'admin.token'), 'utf8').trim()).get('/v1/me')).status).toBe(200);
    await server.proc.stop();

    // A second copy into the now non-empty database is refused and changes nothing.
    const counts = await pgCounts(url);
    const again = await dbCopy(['--from', stack.dataDir, '--to', url]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(
      /^tether: postgres:\/\/postgres@127\.0\.0\.1:\d+\/\w+ is not empty: .*users holds 3 rows.*; tether db copy copies into an empty database only$/,
    );
    expect(await pgCounts(url)).toEqual(counts);
  });

  it('leaves the target without a row when the copy fails midway, and copies it all once the source is mended', async () => {
    const dataDir = tempDir();
    await (await openStore({ dataDir })).close();
    const file = join(dataDir, 'tether.db');
    const db = new Database(file);
    db.pragma('foreign_keys = OFF'); // as some SQLite databases were written once: rows it let through
    const at = new Date().toISOString();
    const audit = db.prepare(
      "INSERT INTO audit_events (event, session_id, device_id, protocol, actor, owner, at, trace_id) VALUES ('session.opened', ?, 'van-1', 'shell', 'admin', 'admin', ?, ?)",
    );
    db.transaction(() => {
      for (let i = 0; i < 12_345; i++) audit.run(`ses_${i}`, at, `trace-${i}`);
    })();
    db.prepare(
      "INSERT INTO fleet_groups (tenant_id, group_id, name, name_key, description, created_at, created_by) VALUES ('acme', 'grp_1', 'Vans', 'vans', ?, ?, 'admin')",
    ).run('Lieferwagen – Zürich 🚐', at);
    const vehicle = db.prepare("INSERT INTO fleet_vehicles (tenant_id, vehicle_id, vin, group_id, created_at) VALUES ('acme', ?, ?, ?, ?)");
    vehicle.run('veh_1', VIN(1), 'grp_1', at);
    vehicle.run('veh_2', VIN(2), 'grp_gone', at); // its group is gone
    db.prepare(
      "INSERT INTO recordings (session_id, device_id, username, started_at, duration_s, sha256, file) VALUES ('ses_1', 'van-1', 'admin', ?, 12.345, 'x', 'r')",
    ).run(at);
    db.prepare(
      "INSERT INTO recordings (session_id, device_id, username, started_at, sha256, file) VALUES ('ses_2', 'van-1', 'admin', ?, 'y', 'ses_2.cast.gz')",
    ).run(at);
    const chunk = Buffer.from(Array.from({ length: 70_000 }, (_, i) => (i * 7919) % 256));
    db.prepare("INSERT INTO recording_chunks (session_id, seq, data) VALUES ('ses_1', 0, ?)").run(chunk);
    db.close();

    const url = await postgres.createDatabase();
    const failed = await dbCopy(['--from', file, '--to', url]);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toMatch(/^copying audit_events: 10000\/12345 rows$/m);
    expect(failed.stderr).toMatch(/^copying audit_events: 12345\/12345 rows$/m);
    expect(failed.stderr).toMatch(
      /^tether: copying fleet_vehicles failed: .*violates foreign key constraint.*\(Key \(tenant_id, group_id\)=\(acme, grp_gone\) is not present in table "fleet_groups"\.\); nothing was copied \(the transaction was rolled back; the target holds no rows\)$/m,
    );
    expect(Object.values(await pgCounts(url)).every((n) => n === 0)).toBe(true);

    const mend = new Database(file);
    mend.prepare("DELETE FROM fleet_vehicles WHERE vehicle_id = 'veh_2'").run();
    mend.close();
    const copied = await dbCopy(['--from', dataDir, '--to', url]);
    expect(copied.code, copied.stderr).toBe(0);
    // SQLite keeps a recording as a file in the data dir: the output says where it is and what moves it.
    expect(copied.stdout).toMatch(/^note: 1 recording\(s\) are files in \S+\/recordings, not rows: start the first server on PostgreSQL with that data dir/m);
    expect(printedCounts(copied.stdout)).toMatchObject({
      audit_events: { source: 12_345, target: 12_345 },
      recordings: { source: 2, target: 2 },
      recording_chunks: { source: 1, target: 1 },
      fleet_vehicles: { source: 1, target: 1 },
    });
    await withClient(url, async (c) => {
      expect((await c.query('SELECT data FROM recording_chunks')).rows[0].data).toEqual(chunk);
      expect((await c.query('SELECT duration_s FROM recordings')).rows[0].duration_s).toBe(12.345);
      expect((await c.query('SELECT description FROM fleet_groups')).rows[0].description).toBe('Lieferwagen – Zürich 🚐');
      // the identity goes on after the copied ids
      expect(Number((await c.query("SELECT nextval(pg_get_serial_sequence('audit_events', 'id')) AS id")).rows[0].id)).toBe(12_346);
    });

    // A target whose trigger changes rows as they arrive does not hold what the source does.
    const altered = await postgres.createDatabase();
    await (await openDatabase({ dataDir: tempDir(), databaseUrl: altered })).close();
    await withClient(altered, (c) =>
      c.query(`CREATE FUNCTION shout() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.description := upper(NEW.description); RETURN NEW; END $$;
               CREATE TRIGGER shout BEFORE INSERT ON fleet_groups FOR EACH ROW EXECUTE FUNCTION shout();`),
    );
    const mismatch = await dbCopy(['--from', dataDir, '--to', altered]);
    expect(mismatch.code).toBe(1);
    expect(mismatch.stdout).toMatch(/^fleet_groups\s+1\s+1\s+MISMATCH: source [0-9a-f]{16}, target [0-9a-f]{16}$/m);
    expect(mismatch.stdout).toMatch(/^audit_events\s+12345\s+12345\s+[0-9a-f]{16} \(same\)$/m);
    expect(mismatch.stderr).toMatch(/^tether: verification failed: fleet_groups in postgres:\/\/\S+ differ from the source/m);
  });

  it('copies a source of an older schema, brought to this one in its snapshot; the source stays as it was', async () => {
    const dataDir = tempDir();
    const file = join(dataDir, 'tether.db');
    const old = new Database(file);
    migrate(old, sqliteMigrations.slice(0, -1));
    old.prepare("INSERT INTO users (username, role, kind, created_at) VALUES ('admin', 'administrator', 'service', ?)").run(new Date().toISOString());
    old.close();
    const url = await postgres.createDatabase();
    const copied = await dbCopy(['--from', dataDir, '--to', url]);
    expect(copied.code, copied.stderr).toBe(0);
    expect(copied.stderr).toContain(`source ${file}: schema version ${LATEST_SCHEMA - 1}, brought to ${LATEST_SCHEMA} in the snapshot`);
    expect(printedCounts(copied.stdout).users).toEqual({ source: 1, target: 1 });
    const after = new Database(file, { readonly: true });
    expect(after.pragma('user_version', { simple: true })).toBe(LATEST_SCHEMA - 1);
    after.close();
  });

  it('refuses, with exit 1 and one line, a source or a target it cannot use', async () => {
    const url = await postgres.createDatabase();
    const nowhere = join(tempDir(), 'nowhere');
    expect(await dbCopy(['--from', nowhere, '--to', url])).toMatchObject({
      code: 1,
      stderr: `tether: ${nowhere}: no such file or directory (--from takes a tether.db or the data dir holding it)`,
    });
    const emptyDir = tempDir();
    expect(await dbCopy(['--from', emptyDir, '--to', url])).toMatchObject({
      code: 1,
      stderr: `tether: no tether database in ${emptyDir} (no tether.db there)`,
    });
    const text = join(emptyDir, 'notes.txt');
    writeFileSync(text, 'not a database at all, just some text that is long enough\n'.repeat(100));
    expect(await dbCopy(['--from', text, '--to', url])).toMatchObject({ code: 1, stderr: `tether: ${text} is not a tether database` });
    const other = join(emptyDir, 'other.db');
    new Database(other).exec('CREATE TABLE t (x); INSERT INTO t VALUES (1)');
    expect(await dbCopy(['--from', other, '--to', url])).toMatchObject({ code: 1, stderr: `tether: ${other} is not a tether database` });

    const dataDir = tempDir();
    await (await openStore({ dataDir })).close();
    const newer = new Database(join(dataDir, 'tether.db'));
    newer.pragma(`user_version = ${LATEST_SCHEMA + 1}`);
    newer.close();
    expect(await dbCopy(['--from', dataDir, '--to', url])).toMatchObject({
      code: 1,
      stderr: `tether: ${join(dataDir, 'tether.db')} has schema version ${LATEST_SCHEMA + 1}, newer than this tether understands (${LATEST_SCHEMA}): run the tether of the server's version`,
    });
    const current = new Database(join(dataDir, 'tether.db'));
    current.pragma(`user_version = ${LATEST_SCHEMA}`);
    current.close();

    // Unreachable: said with the URL but never its password.
    const closedPort = `postgres://postgres:s3cret-pw@127.0.0.1:1/tether`;
    const unreachable = await dbCopy(['--from', dataDir, '--to', closedPort]);
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toMatch(/^tether: cannot reach PostgreSQL at postgres:\/\/postgres@127\.0\.0\.1:1\/tether: .*ECONNREFUSED/);
    expect(unreachable.stderr).not.toContain('s3cret-pw');
    const missing = await dbCopy(['--from', dataDir, '--to', postgres.url('no_such_db')]);
    expect(missing).toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/^tether: cannot reach PostgreSQL at .*no_such_db: database "no_such_db" does not exist$/),
    });
    expect((await dbCopy(['--from', dataDir, '--to', 'mysql://x@y/z'])).code).toBe(2);

    // Rows in any table, ours or not, of any schema: named, and the copy refused.
    await withClient(url, (c) =>
      c.query('CREATE SCHEMA crm; CREATE TABLE crm.notes (x int); INSERT INTO crm.notes VALUES (1), (2); CREATE TABLE empty_one (x int)'),
    );
    const refused = await dbCopy(['--from', dataDir, '--to', url, '--dry-run']);
    expect(refused).toMatchObject({
      code: 1,
      stdout: '',
      stderr: expect.stringMatching(/^tether: postgres:\/\/\S+ is not empty: crm\.notes holds 2 rows; tether db copy copies into an empty database only$/),
    });
    await withClient(url, (c) => c.query('DELETE FROM crm.notes'));
    expect((await dbCopy(['--from', dataDir, '--to', url, '--dry-run'])).code).toBe(0);
  });

  it('says what it does in --help', async () => {
    const help = await runTether(['db', 'copy', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('--dry-run');
    expect(help.stdout).toMatch(/empty PostgreSQL database/);
    expect(help.stdout.replace(/\s+/g, ' ')).toContain('peers and rate_limit_hits are runtime state and are not copied');
  });
});
