/**
 * Backups and restores of a real server's database and recordings (docs/backup.md): `tether
 * backup` while the server writes, `tether restore` refused while it runs, and a server started on
 * a restored data dir holding the data and playing the recordings; README.md's steps as written; a
 * database newer than the server is refused with what to do.
 */
import Database from 'better-sqlite3';
import { chownSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LATEST_SCHEMA } from '../../api/store/backup';
import { client } from '../helpers/http';
import { runTether, startProcess, startServerProcess, TETHER_BIN } from '../helpers/processes';
import { readmeBlocks, recordedShell, runCommand, stepsOf, unitLines } from '../helpers/operator-steps';
import { tempDir } from '../helpers/stack';
import { waitFor } from '../helpers/wait';

const run = (args: string[]) => runTether(args);

function inspect(file: string): { integrity: unknown; users: string[] } {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    return {
      integrity: db.pragma('integrity_check', { simple: true }),
      users: (db.prepare('SELECT username FROM users').all() as Array<{ username: string }>).map((u) => u.username),
    };
  } finally {
    db.close();
  }
}

describe('tether backup and restore', () => {
  it('backs up while the server writes; a server on the restored copy has the data', async () => {
    const dataDir = tempDir();
    const { proc, url } = await startServerProcess(dataDir);
    const token = readFileSync(join(dataDir, 'admin.token'), 'utf8').trim();
    const admin = client(url, token);

    // Users are created without pause while the backup runs; those created before it must be in it.
    const created: string[] = [];
    let writing = true;
    const writer = (async () => {
      for (let i = 0; writing; i++) {
        const res = await admin.post('/v1/users', { username: `user-${i}`, role: 'developer', kind: 'service' });
        expect(res.status).toBe(201);
        created.push(`user-${i}`);
      }
    })();
    while (created.length < 20) await admin.get('/healthz');
    const before = [...created];
    const file = join(tempDir(), 'tether-backup.db');
    const backup = await run(['backup', file, '--data-dir', dataDir]);
    const after = created.length;
    writing = false;
    await writer;
    expect(backup).toMatchObject({ code: 0, stderr: '' });
    expect(after).toBeGreaterThan(before.length); // the server did write during the backup
    expect(backup.stdout).toMatch(new RegExp(`^wrote ${file} \\(${statSync(file).size} bytes, schema version \\d+, 0 recordings\\)$`));
    expect((statSync(file).mode & 0o777).toString(8)).toBe('600');
    const copied = inspect(file);
    expect(copied.integrity).toBe('ok');
    expect(copied.users).toEqual(expect.arrayContaining(['admin', ...before]));
    expect(existsSync(`${file}-wal`)).toBe(false); // one self-contained file

    // An existing file is kept unless --force.
    const again = await run(['backup', file, '--data-dir', dataDir]);
    expect(again).toMatchObject({ code: 1, stdout: '' });
    expect(again.stderr).toBe(`tether: ${file} already exists (--force overwrites it)`);
    expect(inspect(file).users).toEqual(copied.users);
    expect((await run(['backup', file, '--data-dir', dataDir, '--force'])).code).toBe(0);
    expect(inspect(file).users.length).toBeGreaterThan(copied.users.length);

    // Restoring over the database of a running server is refused, and changes nothing.
    const refused = await run(['restore', file, '--data-dir', dataDir]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(`tether: ${join(dataDir, 'tether.db')} is in use by another process (a running tether server?): stop it first`);
    expect(readdirSync(dataDir).filter((f) => f.includes('restor'))).toEqual([]);
    expect((await admin.get('/v1/users')).body.data).toHaveLength(created.length + 1); // and admin
    await proc.stop();

    // Into a fresh data dir, then a server on it: the data is there, and the old token works.
    const fresh = join(tempDir(), 'restored');
    const restored = await run(['restore', file, '--data-dir', fresh]);
    expect(restored).toMatchObject({ code: 0, stderr: '' });
    expect(restored.stdout).toMatch(new RegExp(`^restored ${file} \\(\\d+ bytes, schema version \\d+, 0 recordings\\) to ${join(fresh, 'tether.db')}$`));
    const second = await startServerProcess(fresh);
    expect(second.proc.stdout.some((l) => l.startsWith('created user admin'))).toBe(false);
    const users = (await client(second.url, token).get('/v1/users')).body.data.map((u: { username: string }) => u.username);
    expect(users).toEqual(expect.arrayContaining(['admin', ...before]));
    await second.proc.stop();
    expect(inspect(join(fresh, 'tether.db')).integrity).toBe('ok');
  });

  it('restoring over a stopped server keeps the database it replaces, and leaves no stale WAL', async () => {
    const dataDir = tempDir();
    const first = await startServerProcess(dataDir);
    const token = readFileSync(join(dataDir, 'admin.token'), 'utf8').trim();
    const file = join(tempDir(), 'early.db');
    expect((await run(['backup', file, '--data-dir', dataDir])).code).toBe(0);
    expect((await client(first.url, token).post('/v1/users', { username: 'after-backup', kind: 'service' })).status).toBe(201);
    first.proc.kill('SIGKILL'); // leaves tether.db-wal and -shm behind, holding the newest writes
    await first.proc.exited;
    expect(existsSync(join(dataDir, 'tether.db-wal'))).toBe(true);

    const restored = await run(['restore', file, '--data-dir', dataDir]);
    expect(restored.code).toBe(0);
    const aside = readdirSync(dataDir).find((f) => f.startsWith('tether.db.before-restore-'));
    expect(restored.stdout.split('\n')[0]).toBe(`kept the database it replaces in ${join(dataDir, aside!)}`);
    expect(restored.stdout.split('\n')[2]).toBe("admin.token is as it was; the tokens that work now are the backup's (`tether admin token` issues a new one)");
    expect(inspect(join(dataDir, aside!)).users).toContain('after-backup');
    expect(readdirSync(dataDir).filter((f) => /-(wal|shm)$/.test(f))).toEqual([]);
    const users = inspect(join(dataDir, 'tether.db')).users;
    expect(users).toContain('admin');
    expect(users).not.toContain('after-backup');
  });

  it('a database newer than this tether: restore and the server refuse it, saying what to do', async () => {
    const dataDir = tempDir();
    const first = await startServerProcess(dataDir);
    await first.proc.stop();
    const db = new Database(join(dataDir, 'tether.db'));
    db.pragma('user_version = 999');
    db.close();

    const server = startProcess(['server'], { TETHER_LISTEN: '127.0.0.1:0', TETHER_DATA_DIR: dataDir });
    expect((await server.exited).code).toBe(1);
    expect(server.stderr.join('\n')).toContain(
      `database schema version 999 is newer than this build understands (${LATEST_SCHEMA}): upgrade tether, or restore a backup made by this version`,
    );
    const backup = join(tempDir(), 'newer.db');
    expect((await run(['backup', backup, '--data-dir', dataDir])).code).toBe(0);
    const restore = await run(['restore', backup, '--data-dir', join(tempDir(), 'fresh')]);
    expect(restore.code).toBe(1);
    expect(restore.stderr).toContain(`was made by a newer tether (schema version 999; this one understands up to ${LATEST_SCHEMA}): upgrade tether`);
  });

  it('refuses a file that is not a tether database, a data dir without one, and a missing directory', async () => {
    const junk = join(tempDir(), 'junk.db');
    writeFileSync(junk, 'not a database at all, just text that is long enough to be read as a header');
    const fresh = join(tempDir(), 'fresh');
    const restore = await run(['restore', junk, '--data-dir', fresh]);
    expect(restore).toMatchObject({ code: 1, stderr: `tether: ${junk} is not a tether database` });
    expect(readdirSync(fresh)).toEqual([]);
    const empty = tempDir();
    const backup = await run(['backup', join(empty, 'b.db'), '--data-dir', join(empty, 'nothing')]);
    expect(backup).toMatchObject({ code: 1, stderr: `tether: no tether database in ${join(empty, 'nothing')} (set --data-dir, or TETHER_DATA_DIR)` });
    expect(existsSync(join(empty, 'nothing'))).toBe(false);
    const server = await startServerProcess(empty);
    const nowhere = await run(['backup', join(empty, 'no-dir', 'b.db'), '--data-dir', empty]);
    expect(nowhere).toMatchObject({ code: 1, stderr: `tether: ${join(empty, 'no-dir')}: no such directory` });
    await server.proc.stop();
  });
});

describe("README.md's backup and restore, with recordings", () => {
  it('runs as written: a backup while the server runs with recorded shells, a restore; the restored server plays them', async () => {
    const base = tempDir('tether-readme-backup-');
    const dataDir = join(base, 'var-lib-tether');
    const backups = join(base, 'backups');
    const bin = join(base, 'bin');
    mkdirSync(bin);
    symlinkSync(TETHER_BIN, join(bin, 'tether'));
    const server = await startServerProcess(dataDir);
    const token = readFileSync(join(dataDir, 'admin.token'), 'utf8').trim();
    const admin = client(server.url, token);
    const device = await admin.post('/v1/devices', { device_id: 'backup-dev' });
    const agent = startProcess(['agent', '--server', server.url, '--device-id', 'backup-dev'], { TETHER_DEVICE_TOKEN: device.body.data.agent_token });
    let restarted: Awaited<ReturnType<typeof startServerProcess>> | undefined;
    try {
      await waitFor(async () => (await admin.get('/v1/devices/backup-dev')).body.data.agent_status === 'online', 'the agent');
      const ctx = { url: server.url, admin, token };
      const done = await recordedShell(ctx, 'backup-dev', 'echo finished-$((6*7))', /finished-42/, true);
      const original = (await admin.get(`/v1/remote-access/sessions/${done.id}/recording`)).text;
      const running = await recordedShell(ctx, 'backup-dev', 'echo still-running-$((5*5))', /still-running-25/, false);

      const steps = stepsOf(readmeBlocks('Backups, restores and upgrades'), { '/var/lib/tether': dataDir, '/backups': backups });
      expect(steps.map((s) => s.command.split(' ').slice(0, 2).join(' '))).toEqual([
        `mkdir -p`,
        'tether backup',
        'systemctl stop',
        'tether restore',
        'systemctl start',
      ]);
      // docs/backup.md's daily unit, its ExecStart and ExecStartPost as systemd would run them (% and $ unescaped).
      const timed = join(base, 'var-backups-tether');
      mkdirSync(timed, { mode: 0o700 });
      for (const [key, line] of unitLines(dataDir, timed)) {
        const run = runCommand(line, bin);
        expect(run.code, `${key}: ${line}\n${run.stderr}`).toBe(0);
        if (key === 'ExecStart')
          expect(run.stdout).toEqual([
            expect.stringMatching(new RegExp(`^wrote ${timed}/tether-\\d{4}-\\d{2}-\\d{2}\\.db \\(\\d+ bytes, schema version \\d+, 2 recordings\\)$`)),
          ]);
      }
      expect(readdirSync(timed)).toHaveLength(1);

      let backupFile = '';
      for (const step of steps) {
        if (step.command === 'systemctl stop tether-server') {
          running.c.ws.close();
          await server.proc.stop();
          // the service's own user owns the data dir (DynamicUser): a restore as root keeps it so
          if (process.getuid?.() === 0) chownSync(dataDir, 65534, 65534);
          continue;
        }
        if (step.command === 'systemctl start tether-server') {
          restarted = await startServerProcess(dataDir);
          continue;
        }
        const command = step.command.replace(/tether-\d{4}-\d{2}-\d{2}\.db/, backupFile.split('/').pop() ?? '');
        const run = runCommand(command, bin);
        expect(run.code, `${command}\n${run.stderr}`).toBe(0);
        expect(run.stdout.length, command).toBe(step.expected.length);
        step.expected.forEach((pattern, i) => expect(run.stdout[i]).toMatch(pattern));
        backupFile = /^wrote (\S+)/.exec(run.stdout[0] ?? '')?.[1] ?? backupFile;
        if (command.startsWith('tether backup')) expect(run.stdout[0]).toMatch(/, 2 recordings\)$/);
      }

      // The restored server has the sessions and plays both recordings: the finished one byte for byte.
      const again = client(restarted!.url, token);
      if (process.getuid?.() === 0) expect(statSync(join(dataDir, 'tether.db')).uid).toBe(65534);
      expect(readdirSync(dataDir).filter((f) => f.startsWith('recordings.before-restore-'))).toHaveLength(1);
      const ids = (await again.get('/v1/remote-access/sessions?per_page=100')).body.data.map((x: { session_id: string }) => x.session_id);
      expect(ids).toEqual(expect.arrayContaining([done.id, running.id]));
      const played = await again.get(`/v1/remote-access/sessions/${done.id}/recording`);
      expect(played.status).toBe(200);
      expect(played.text).toBe(original);
      const partial = await again.get(`/v1/remote-access/sessions/${running.id}/recording`);
      expect(partial.text).toContain('still-running-25');
      const record = (await again.get(`/v1/remote-access/sessions/${running.id}`)).body.data.recording;
      expect(record).toMatchObject({ in_progress: false, bytes: Buffer.byteLength(partial.text) });
      // A backup of the restored server: the recordings it plays from its database are in it again.
      const second = join(backups, 'second.db');
      expect((await run(['backup', second, '--data-dir', dataDir])).stdout).toMatch(/, 2 recordings\)$/);
      await restarted!.proc.stop();

      // That file on a new host: a fresh data dir, nothing of the old one.
      const fresh = join(base, 'new-host');
      const restored = await run(['restore', second, '--data-dir', fresh]);
      expect(restored.stdout).toMatch(/, 2 recordings\) to /);
      restarted = await startServerProcess(fresh);
      expect(existsSync(join(fresh, 'recordings'))).toBe(false);
      expect((await client(restarted.url, token).get(`/v1/remote-access/sessions/${done.id}/recording`)).text).toBe(original);
    } finally {
      await restarted?.proc.stop();
      await agent.stop();
      await server.proc.stop();
    }
  });

  it('a recording whose file is gone is left out, and said so; the rest of the backup is whole', async () => {
    const dataDir = tempDir();
    const server = await startServerProcess(dataDir);
    const token = readFileSync(join(dataDir, 'admin.token'), 'utf8').trim();
    const admin = client(server.url, token);
    const device = await admin.post('/v1/devices', { device_id: 'gone-dev' });
    const agent = startProcess(['agent', '--server', server.url, '--device-id', 'gone-dev'], { TETHER_DEVICE_TOKEN: device.body.data.agent_token });
    try {
      await waitFor(async () => (await admin.get('/v1/devices/gone-dev')).body.data.agent_status === 'online', 'the agent');
      const ctx = { url: server.url, admin, token };
      const kept = await recordedShell(ctx, 'gone-dev', 'echo kept-$((2*4))', /kept-8/, true);
      const lost = await recordedShell(ctx, 'gone-dev', 'echo lost-$((3*4))', /lost-12/, true);
      rmSync(join(dataDir, 'recordings', `${lost.id}.cast.gz`));
      const file = join(tempDir(), 'b.db');
      const backup = await run(['backup', file, '--data-dir', dataDir]);
      expect(backup.code).toBe(0);
      expect(backup.stdout.split('\n')).toEqual([
        expect.stringMatching(new RegExp(`^wrote ${file} \\(\\d+ bytes, schema version \\d+, 1 recording\\)$`)),
        `left out the recording of ${lost.id}: its file is gone (deleted by the retention?)`,
      ]);
      const db = new Database(file, { readonly: true });
      try {
        expect(db.prepare('SELECT session_id FROM recordings').all()).toEqual([{ session_id: kept.id }]);
        expect((db.prepare('SELECT count(*) AS n FROM recording_chunks WHERE session_id = ?').get(kept.id) as { n: number }).n).toBeGreaterThan(0);
      } finally {
        db.close();
      }
    } finally {
      await agent.stop();
      await server.proc.stop();
    }
  });
});
