/**
 * The operator's experience of the `tether` client (docs/cli.md): help that explains device
 * paths, usage mistakes caught before any session opens, logging in and out, and the account
 * commands. A real server and agents, the real `dist/tether.cjs`.
 */
import { chmodSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import * as pty from 'node-pty';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client } from '../helpers/http';
import { runTether, TETHER_BIN } from '../helpers/processes';
import { startStack, tempDir, type Stack } from '../helpers/stack';
import { waitFor } from '../helpers/wait';

let stack: Stack;
let configHome: string;

beforeAll(async () => {
  stack = await startStack();
  configHome = tempDir('tether-op-config-');
});
afterAll(() => stack.stop());

/** Runs `tether ARGS` to completion with `env` over the config home (no server, no token). */
const run = (args: string[], env: Record<string, string> = {}, input = '') => runTether(args, { XDG_CONFIG_HOME: configHome, ...env }, input);

/** The URL of a port nothing listens on (any more). */
async function closedPortUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  await new Promise((r) => server.close(r));
  return `http://127.0.0.1:${port}`;
}

const asAdmin = () => ({ TETHER_SERVER: stack.url, TETHER_TOKEN: stack.adminToken });
const configFile = () => join(configHome, 'tether', 'config.json');
const stored = () => JSON.parse(readFileSync(configFile(), 'utf8'));

describe('cp --help', () => {
  it("says device paths are relative to the agent's files root, with examples", async () => {
    const help = await run(['cp', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("Device paths are relative to the agent's files root");
    expect(help.stdout).toContain("default: the agent's working directory");
    expect(help.stdout).toContain('`/` means the files root itself');
    expect(help.stdout).toMatch(/Examples:\n +tether cp \.\/build laptop:\/ /);
  });
});

describe('diag usage mistakes', () => {
  it('exit 2 with the ops listed, before any session is opened', async () => {
    await stack.onlineDevice('op-diag');
    const unknown = await run(['diag', 'op-diag', 'bogus.op'], asAdmin());
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('unknown diagnostics op bogus.op; the ops are system.info, system.metrics, disk.usage');
    const misplaced = await run(['diag', 'op-diag', 'system.info', '--path', '/var/log/syslog'], asAdmin());
    expect(misplaced).toMatchObject({ code: 2, stderr: 'tether: --path is not an option of system.info; it goes with log.tail' });
    expect((await run(['diag', 'op-diag', '--lines', '5'], asAdmin())).code).toBe(2);
    expect((await run(['diag', 'op-diag', 'log.tail'], asAdmin())).stderr).toContain('log.tail needs --path');
    const sessions = await stack.admin.get('/v1/remote-access/sessions?device_id=op-diag');
    expect(sessions.body.data).toEqual([]);
  });
});

describe('login, logout and token', () => {
  it('logout revokes the stored token on the server and forgets it, keeping the other fields and the mode', async () => {
    await stack.admin.post('/v1/users', { username: 'op-ann', role: 'developer', password: 'a long passphrase' });
    const login = await run(['login', '--server', stack.url, '--username', 'op-ann', '--password-stdin'], {}, 'a long passphrase\n');
    expect(login.code).toBe(0);
    const { token, token_id } = stored();
    expect(token_id).toMatch(/\S/);
    writeFileSync(configFile(), JSON.stringify({ ...stored(), editor: 'vim' }));
    chmodSync(configFile(), 0o640);

    const logout = await run(['logout']);
    expect(logout).toMatchObject({ code: 0, stderr: `revoked the token on ${stack.url}; removed it from ${configFile()}` });
    expect((await stack.as(token).get('/v1/me')).status).toBe(401);
    expect(stored()).toEqual({ server: stack.url, username: 'op-ann', editor: 'vim' });
    expect(statSync(configFile()).mode & 0o777).toBe(0o640);

    // the server and the user are remembered: a plain `tether login` is all it takes
    const none = await run(['token']);
    expect(none).toMatchObject({ code: 1, stderr: expect.stringContaining('log in with `tether login`') });
    expect((await run(['logout'])).stderr).toBe(`not logged in: no token is stored in ${configFile()}`);
  });

  it('logout forgets the token even when the server is unreachable or the token no longer valid', async () => {
    const gone = await closedPortUrl();
    mkdirSync(join(configHome, 'tether'), { recursive: true });
    writeFileSync(configFile(), JSON.stringify({ server: gone, username: 'op-ann', token: 'tth_gone', expires_at: '2099-01-01T00:00:00Z' }));
    const unreachable = await run(['logout']);
    expect(unreachable.code).toBe(0);
    expect(unreachable.stderr).toContain(`cannot reach ${gone}: ECONNREFUSED`);
    expect(unreachable.stderr).toContain('so the token was not revoked; it stays valid until 2099-01-01T00:00:00Z; removed it from');
    expect(stored()).toEqual({ server: gone, username: 'op-ann' });

    writeFileSync(configFile(), JSON.stringify({ server: stack.url, token: 'tth_not-a-token', token_id: 'tok-x' }));
    const invalid = await run(['logout']);
    expect(invalid).toMatchObject({ code: 0, stderr: `the token was no longer valid on ${stack.url}; removed it from ${configFile()}` });
    expect(stored()).toEqual({ server: stack.url });
  });

  it('token says how to log in when nothing is stored', async () => {
    const res = await run(['token'], { XDG_CONFIG_HOME: tempDir() });
    expect(res.code).toBe(1);
    expect(res.stderr).toContain('log in with `tether login --server URL --username NAME`');
  });
});

describe('user and token commands', () => {
  /** A person's own config home, logged in with `password`. */
  async function loggedIn(username: string, password: string) {
    const env = { XDG_CONFIG_HOME: tempDir('tether-op-person-') };
    const login = await run(['login', '--server', stack.url, '--username', username, '--password-stdin'], env, `${password}\n`);
    expect(login.stderr).toContain(`logged in to ${stack.url} as ${username}`);
    const { token, token_id } = JSON.parse(readFileSync(join(env.XDG_CONFIG_HOME, 'tether', 'config.json'), 'utf8'));
    return { env, token: token as string, tokenId: token_id as string };
  }

  it('add, list, passwd, disable and enable, rm: each says what it did', async () => {
    const added = await run(['user', 'add', 'op-bob', '--role', 'developer', '--password-stdin'], asAdmin(), 'bob passphrase 1\n');
    expect(added).toMatchObject({ code: 0, stdout: 'added op-bob (developer, human)', stderr: '' });
    expect((await run(['user', 'add', 'op-svc', '--service'], asAdmin())).stdout).toBe('added op-svc (no role, service)');
    const carl = await run(['user', 'add', 'op-carl'], asAdmin());
    expect(carl.stderr).toBe('op-carl has no password and cannot log in yet: set one with `tether user passwd op-carl`');
    expect((await run(['user', 'add', 'op-dan', '--role', 'boss'], asAdmin())).code).toBe(2);

    const list = await run(['user', 'list'], asAdmin());
    expect(list.stdout.split('\n')[0]).toMatch(/^USER +ROLE +KIND +STATE +CREATED$/);
    expect(list.stdout).toMatch(/^op-bob +developer +human +enabled +\d{4}-/m);
    expect(list.stdout).toMatch(/^op-svc +- +service +enabled/m);

    // your own password needs the current one, from the first line of stdin
    const bob = await loggedIn('op-bob', 'bob passphrase 1');
    const wrong = await run(['user', 'passwd', '--password-stdin'], bob.env, 'not it\nbob passphrase 2\n');
    expect(wrong).toMatchObject({ code: 1, stderr: 'tether: current_password is not the password of op-bob' });
    const own = await run(['user', 'passwd', '--password-stdin'], bob.env, 'bob passphrase 1\nbob passphrase 2\n');
    expect(own).toMatchObject({ code: 0, stdout: 'set the password of op-bob' });
    expect((await run(['user', 'passwd', '--password-stdin'], bob.env, 'only one line\n')).code).toBe(2);
    // an administrator sets anyone's, with the new password alone
    const reset = await run(['user', 'passwd', 'op-carl', '--password-stdin'], asAdmin(), 'carl passphrase\n');
    expect(reset).toMatchObject({ code: 0, stdout: 'set the password of op-carl' });
    const carlIn = await loggedIn('op-carl', 'carl passphrase');

    expect((await run(['user', 'list'], bob.env)).stderr).toContain('administrator');
    const disabled = await run(['user', 'disable', 'op-bob'], asAdmin());
    expect(disabled).toMatchObject({ code: 0, stdout: expect.stringMatching(/^disabled op-bob: its tokens stop working/) });
    expect((await stack.as(bob.token).get('/v1/me')).status).toBe(401);
    const refused = await run(['login', '--server', stack.url, '--username', 'op-bob', '--password-stdin'], bob.env, 'bob passphrase 2\n');
    expect(refused).toMatchObject({ code: 1, stderr: expect.stringMatching(/^tether: login failed: account op-bob is disabled.* \(op-bob at /) });
    expect((await run(['user', 'enable', 'op-bob'], asAdmin())).stdout).toMatch(/^enabled op-bob: it can log in again/);
    expect((await stack.as(bob.token).get('/v1/me')).status).toBe(401); // revoked for good: op-bob logs in afresh

    expect((await run(['user', 'rm', 'op-carl'], asAdmin())).code).toBe(2); // no terminal to confirm on
    const removed = await run(['user', 'rm', 'op-carl', '--yes'], asAdmin());
    expect(removed).toMatchObject({ code: 0, stdout: expect.stringMatching(/^deleted op-carl: its tokens are revoked/) });
    expect((await stack.as(carlIn.token).get('/v1/me')).status).toBe(401);
    const users = JSON.parse((await run(['user', 'list', '--json'], asAdmin())).stdout) as Array<{ username: string }>;
    expect(users.map((u) => u.username)).toEqual(expect.arrayContaining(['op-bob', 'op-svc']));
    expect(users.map((u) => u.username)).not.toContain('op-carl');
  });

  it("token list shows your tokens (marking the one in use), --all everyone's; token revoke ends one", async () => {
    await stack.admin.post('/v1/users', { username: 'op-eve', role: 'developer', password: 'eve passphrase' });
    const first = await loggedIn('op-eve', 'eve passphrase');
    const second = await loggedIn('op-eve', 'eve passphrase');

    const mine = await run(['token', 'list'], second.env);
    expect(mine.stdout.split('\n')[0]).toMatch(/^TOKEN +USER +SCOPES +STATE +CREATED +EXPIRES$/);
    expect(mine.stdout).toMatch(new RegExp(`^${second.tokenId} \\(this one\\) +op-eve +\\* +active`, 'm'));
    expect(mine.stdout).toMatch(new RegExp(`^${first.tokenId} +op-eve`, 'm'));
    expect(mine.stdout).not.toContain(first.token); // never the token itself
    expect((await run(['token', 'list', '--all'], second.env)).code).toBe(1); // not an administrator

    const revoked = await run(['token', 'revoke', first.tokenId], second.env);
    expect(revoked).toMatchObject({ code: 0, stdout: expect.stringMatching(new RegExp(`^revoked ${first.tokenId}: it answers 401`)) });
    expect((await stack.as(first.token).get('/v1/me')).status).toBe(401);
    const byStatus = JSON.parse((await run(['token', 'list', '--status', 'revoked', '--json'], second.env)).stdout);
    expect(byStatus.map((t: { token_id: string }) => t.token_id)).toEqual([first.tokenId]);

    const all = JSON.parse((await run(['token', 'list', '--all', '--json'], asAdmin())).stdout) as Array<{ username: string }>;
    expect(all.map((t) => t.username)).toEqual(expect.arrayContaining(['op-eve', 'admin']));
    expect((await run(['token', 'revoke', 'tok-nope'], second.env)).code).toBe(1);
  });

  it('passwd on a terminal asks for the new password twice, and changes nothing when they differ', async () => {
    await stack.admin.post('/v1/users', { username: 'op-fay', role: 'developer', password: 'fay passphrase' });
    const term = pty.spawn(process.execPath, [TETHER_BIN, 'user', 'passwd', 'op-fay'], {
      env: { ...process.env, XDG_CONFIG_HOME: configHome, ...asAdmin() } as Record<string, string>,
    });
    let output = '';
    term.onData((d) => (output += d));
    const exited = new Promise<number>((resolve) => term.onExit(({ exitCode }) => resolve(exitCode)));
    try {
      await waitFor(() => output.includes('New password for op-fay: '), 'the first question');
      term.write('first passphrase\r');
      await waitFor(() => output.includes('Again, to be sure: '), 'the second question');
      term.write('other passphrase\r');
      expect(await exited).toBe(1);
    } finally {
      term.kill();
    }
    expect(output).toContain('tether: the two new passwords typed differ; nothing was changed');
    expect(output).not.toContain('passphrase'); // nothing typed was echoed
    const login = await client(stack.url).post('/v1/auth/token', { username: 'op-fay', password: 'fay passphrase' });
    expect(login.status).toBe(200);
  });
});
