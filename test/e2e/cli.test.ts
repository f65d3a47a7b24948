/** The `tether` client as users run it: a subprocess against a real server and agent. */
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { lstatSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import * as pty from 'node-pty';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiClient } from '../../cli/api-client';
import { client } from '../helpers/http';
import { runTether, startProcess, TETHER_BIN } from '../helpers/processes';
import { startStack, tempDir, type Stack } from '../helpers/stack';
import { treeDigest } from '../helpers/tar';
import { waitFor } from '../helpers/wait';

let stack: Stack;
let root: string;
let configHome: string;

beforeAll(async () => {
  stack = await startStack();
  root = tempDir('tether-cli-root-');
  configHome = tempDir('tether-cli-config-');
  await stack.onlineDevice('cli-1', { TETHER_FILES_ROOT: root });
});
afterAll(() => stack.stop());

/** Runs `tether ARGS` to completion; the admin token unless `env` says otherwise. */
const tether = (args: string[], env: Record<string, string | undefined> = {}, input = '') =>
  runTether(args, { XDG_CONFIG_HOME: configHome, TETHER_SERVER: stack.url, TETHER_TOKEN: stack.adminToken, ...env }, input);

const sha = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');

describe('login and token', () => {
  it('stores a user token (mode 0600) and prints it; TETHER_TOKEN overrides it', async () => {
    await stack.admin.post('/v1/users', { username: 'cli-user', role: 'developer', password: 'a long passphrase' });
    const login = await tether(
      ['login', '--server', stack.url, '--username', 'cli-user', '--password-stdin'],
      {
        TETHER_SERVER: undefined,
        TETHER_TOKEN: undefined,
      },
      'a long passphrase\n',
    );
    expect(login.code).toBe(0);
    expect(login.stderr).toContain('logged in to');
    const file = join(configHome, 'tether', 'config.json');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const stored = JSON.parse(readFileSync(file, 'utf8'));
    expect(stored).toMatchObject({ server: stack.url, username: 'cli-user', token: expect.stringMatching(/^tth_/) });

    const printed = await tether(['token'], { TETHER_SERVER: undefined, TETHER_TOKEN: undefined });
    expect(printed).toMatchObject({ code: 0, stdout: stored.token });
    expect((await stack.as(printed.stdout).get('/v1/me')).body.data.username).toBe('cli-user');
    expect((await tether(['token'], { TETHER_TOKEN: 'from-env' })).stdout).toBe('from-env');

    const wrong = await tether(['login', '--server', stack.url, '--username', 'cli-user', '--password-stdin'], {}, 'nope\n');
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toBe(`tether: login failed: unknown user or wrong password (cli-user at ${stack.url})`);
    expect(wrong.stderr).not.toContain('Log in again'); // advice for a stale token, not for a typo
  });

  it('does not retry a login refused for too many failures: the same password would count again', async () => {
    await stack.admin.post('/v1/users', { username: 'cli-locked', role: 'developer', password: 'a long passphrase' });
    for (let i = 0; i < 10; i++) await client(stack.url).post('/v1/auth/token', { username: 'cli-locked', password: 'wrong' });
    const locked = await tether(['login', '--server', stack.url, '--username', 'cli-locked', '--password-stdin'], {}, 'a long passphrase\n');
    expect(locked.code).toBe(1);
    expect(locked.stderr).toMatch(/too many failed logins for this user/);
    expect(locked.stderr).not.toContain('waiting');
  });
});

describe('sessions', () => {
  it('opens, lists and closes, as tables and as JSON', async () => {
    const opened = await tether(['session', 'open', 'cli-1', '--protocol', 'diagnostics', '--ttl', '600', '--json']);
    expect(opened.code).toBe(0);
    const s = JSON.parse(opened.stdout);
    expect(s).toMatchObject({ device_id: 'cli-1', protocol: 'diagnostics', ttl_seconds: 600, status: 'open' });

    const table = await tether(['session', 'list', '--device', 'cli-1', '--status', 'open']);
    expect(table.stdout.split('\n')[0]).toMatch(/^SESSION\s+DEVICE\s+PROTOCOL\s+STATUS/);
    expect(table.stdout).toContain(s.session_id);
    const json = JSON.parse((await tether(['session', 'list', '--json', '--status', 'open'])).stdout);
    expect(json.map((x: { session_id: string }) => x.session_id)).toContain(s.session_id);

    // 409: explained, with --replace offered; --replace closes the old one first
    const conflict = await tether(['session', 'open', 'cli-1', '--protocol', 'diagnostics']);
    expect(conflict.code).toBe(1);
    expect(conflict.stderr).toContain(s.session_id);
    expect(conflict.stderr).toContain('--replace');
    const replaced = await tether(['session', 'open', 'cli-1', '--protocol', 'diagnostics', '--replace', '--json']);
    expect(replaced.code).toBe(0);
    expect(replaced.stderr).toContain(`closing session ${s.session_id}`);
    const next = JSON.parse(replaced.stdout);

    const closed = await tether(['session', 'close', next.session_id]);
    expect(closed).toMatchObject({ code: 0, stdout: expect.stringContaining(`closed ${next.session_id}`) });
    const again = await tether(['session', 'close', next.session_id]);
    expect(again.code).toBe(1);
  });

  it("explains a session someone else holds (who, since when) and offers --replace only for the caller's own", async () => {
    const peteToken = await stack.userToken('cli-pete', 'platform-engineer');
    const theirs = (await stack.as(peteToken).post('/v1/remote-access/sessions', { device_id: 'cli-1', protocol: 'shell' })).body.data;
    const paulaToken = await stack.userToken('cli-paula', 'platform-engineer');
    const shell = (flags: string[], token: string) => tether(['session', 'open', 'cli-1', '--protocol', 'shell', ...flags], { TETHER_TOKEN: token });

    const plain = await shell([], paulaToken);
    expect(plain.code).toBe(1);
    expect(plain.stderr).toContain(`cli-pete holds it (opened at ${theirs.opened_at})`);
    expect(plain.stderr).not.toContain('--replace');
    const replacing = await shell(['--replace'], paulaToken);
    expect(replacing.code).toBe(1);
    expect(replacing.stderr).toContain('--replace closes only your own sessions');
    // an administrator is shown how to close it; its --replace leaves it open too
    const admin = await shell(['--replace'], stack.adminToken);
    expect(admin.code).toBe(1);
    expect(admin.stderr).toContain(`tether session close ${theirs.session_id}`);
    expect((await stack.admin.get(`/v1/remote-access/sessions/${theirs.session_id}`)).body.data.status).toBe('open');
    // its owner is offered --replace, and --replace replaces it
    const own = await shell([], peteToken);
    expect(own.code).toBe(1);
    expect(own.stderr).toContain(`yours (${theirs.session_id})`);
    expect(own.stderr).toContain('Run again with --replace');
    const replaced = await shell(['--replace', '--json'], peteToken);
    expect(replaced.code).toBe(0);
    expect(replaced.stderr).toContain(`closing session ${theirs.session_id} (--replace)`);
    await stack.as(peteToken).del(`/v1/remote-access/sessions/${JSON.parse(replaced.stdout).session_id}`);
  });

  it('explains an offline agent and waits for it with --wait-online', async () => {
    const token = await stack.addDevice('cli-late');
    const offline = await tether(['session', 'open', 'cli-late', '--protocol', 'diagnostics']);
    expect(offline.code).toBe(1);
    expect(offline.stderr).toContain('offline');
    expect(offline.stderr).toContain('--wait-online');
    const waiting = startProcess(['session', 'open', 'cli-late', '--protocol', 'diagnostics', '--wait-online', '--json'], {
      XDG_CONFIG_HOME: configHome,
      TETHER_SERVER: stack.url,
      TETHER_TOKEN: stack.adminToken,
    });
    await waiting.waitForLine(/waiting up to/);
    stack.startAgent('cli-late', token);
    expect((await waiting.exited).code).toBe(0);
    expect(JSON.parse(waiting.stdout.join('\n'))).toMatchObject({ device_id: 'cli-late', status: 'open' });
  });

  it('exit codes: 2 for usage mistakes, 1 for failures with a clear message', async () => {
    expect((await tether(['session', 'open', 'cli-1'])).code).toBe(2); // --protocol missing
    expect((await tether(['session', 'open', 'cli-1', '--protocol', 'telnet'])).code).toBe(2);
    expect((await tether(['session', 'open', 'cli-1', '--protocol', 'shell', '--ttl', '10'])).code).toBe(2);
    expect((await tether(['no-such-command'])).code).toBe(2);
    expect((await tether(['cp', 'a', 'b'])).code).toBe(2);
    const unknown = await tether(['session', 'open', 'nowhere', '--protocol', 'diagnostics']);
    expect(unknown).toMatchObject({ code: 1, stderr: expect.stringContaining('no device nowhere') });
    const loggedOut = await tether(['session', 'list'], { TETHER_TOKEN: undefined, TETHER_SERVER: undefined, XDG_CONFIG_HOME: tempDir() });
    expect(loggedOut).toMatchObject({ code: 1, stderr: expect.stringContaining('tether login') });
    const badToken = await tether(['session', 'list'], { TETHER_TOKEN: 'tth_wrong' });
    expect(badToken).toMatchObject({ code: 1, stderr: expect.stringContaining('Log in again') });
  });
});

describe('device add', () => {
  it('prints the agent token and the exact command that starts the agent', async () => {
    const res = await tether(['device', 'add', 'cli-new', '--label', 'site=lab']);
    expect(res.code).toBe(0);
    const token = /tdev_[A-Za-z0-9_-]+/.exec(res.stdout)![0];
    const command = `TETHER_DEVICE_TOKEN=${token} tether agent --server ${stack.url} --device-id cli-new`;
    expect(res.stdout).toContain(command);
    expect((await stack.admin.get('/v1/devices/cli-new')).body.data.labels).toEqual({ site: 'lab' });
    // the printed command works as printed
    const agent = startProcess(['agent', '--server', stack.url, '--device-id', 'cli-new'], { TETHER_DEVICE_TOKEN: token });
    await stack.waitForStatus('cli-new', 'online');
    await agent.stop();
    expect((await tether(['device', 'add', 'cli-new'])).stderr).toContain('already exists');
  });
});

describe('cp', () => {
  it('copies a file and a directory tree both ways, byte for byte', async () => {
    const local = tempDir();
    const tree = join(local, 'tree');
    mkdirSync(join(tree, 'nested'), { recursive: true });
    writeFileSync(join(tree, 'blob.bin'), randomBytes(2 * 1024 * 1024 + 3));
    writeFileSync(join(tree, 'nested', 'a.txt'), 'a\n');
    symlinkSync('nested/a.txt', join(tree, 'link'));
    writeFileSync(join(local, 'single.bin'), randomBytes(100_000));

    const up = await tether(['cp', tree, 'cli-1:/']);
    expect(up.code).toBe(0);
    expect(up.stderr).toMatch(/copied 2 files, 2\.0 MiB .*sizes checked/);
    expect(treeDigest(join(root, 'tree'))).toEqual(treeDigest(tree));

    expect((await tether(['cp', join(local, 'single.bin'), 'cli-1:renamed.bin'])).code).toBe(0);
    expect(sha(join(root, 'renamed.bin'))).toBe(sha(join(local, 'single.bin')));

    const back = tempDir();
    // into an existing directory; -r as scp users type it (directories are always copied whole)
    expect((await tether(['cp', '-r', 'cli-1:tree', back])).code).toBe(0);
    expect(treeDigest(join(back, 'tree'))).toEqual(treeDigest(tree));
    expect((await tether(['cp', 'cli-1:/renamed.bin', join(back, 'copy.bin')])).code).toBe(0);
    expect(sha(join(back, 'copy.bin'))).toBe(sha(join(local, 'single.bin')));

    // the sessions it opened are closed again
    const open = await stack.admin.get('/v1/remote-access/sessions?status=open&device_id=cli-1&protocol=file-transfer');
    expect(open.body.data).toEqual([]);
  });

  it('shows a progress bar with rate and ETA on a terminal, and none otherwise', async () => {
    const file = join(tempDir(), 'progress.bin');
    writeFileSync(file, randomBytes(8 * 1024 * 1024));
    const plain = await tether(['cp', file, 'cli-1:/progress-plain.bin']);
    expect(plain.code).toBe(0);
    expect(plain.stderr.split('\n')).toEqual([expect.stringMatching(/^copied 1 file, 8\.0 MiB in /)]);

    const term = pty.spawn(process.execPath, [TETHER_BIN, 'cp', file, 'cli-1:/progress-tty.bin'], {
      cols: 120,
      rows: 10,
      env: { ...process.env, XDG_CONFIG_HOME: configHome, TETHER_SERVER: stack.url, TETHER_TOKEN: stack.adminToken } as Record<string, string>,
    });
    let output = '';
    term.onData((d) => (output += d));
    const code = await new Promise<number>((resolve) => term.onExit(({ exitCode }) => resolve(exitCode)));
    expect(code).toBe(0);
    expect(output).toMatch(/100% 8\.0 MiB of 8\.0 MiB [\d.]+ [KMG]?i?B\/s ETA/);
    expect(sha(join(root, 'progress-tty.bin'))).toBe(sha(file));
  });

  it('a destination ending in / is a directory: created when missing, never a file of that name', async () => {
    const local = tempDir();
    writeFileSync(join(local, 'one.txt'), 'one\n');
    const up = await tether(['cp', join(local, 'one.txt'), 'cli-1:/made-dir/']);
    expect(up.code).toBe(0);
    expect(statSync(join(root, 'made-dir')).isDirectory()).toBe(true);
    expect(readFileSync(join(root, 'made-dir', 'one.txt'), 'utf8')).toBe('one\n');
    // its parent must exist, and a file of that name is not a directory
    const deep = await tether(['cp', join(local, 'one.txt'), 'cli-1:/no/such/parent/']);
    expect(deep).toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/\/no\/such under the files root .* of cli-1.*\(a destination ending in \/ is created, not its parents\)/),
    });
    expect(lstatSync(join(root, 'no'), { throwIfNoEntry: false })).toBeUndefined();
    const onFile = await tether(['cp', join(local, 'one.txt'), 'cli-1:/made-dir/one.txt/']);
    expect(onFile).toMatchObject({ code: 1, stderr: expect.stringContaining('not a directory on cli-1: /made-dir/one.txt/') });

    const back = join(tempDir(), 'fresh');
    expect((await tether(['cp', 'cli-1:/made-dir/one.txt', `${back}/`])).code).toBe(0);
    expect(readFileSync(join(back, 'one.txt'), 'utf8')).toBe('one\n');
    const missingParent = await tether(['cp', 'cli-1:/made-dir/one.txt', join(tempDir(), 'a', 'b') + '/']);
    expect(missingParent).toMatchObject({ code: 1, stderr: expect.stringMatching(/no such directory: .*\/a \(a destination ending in/) });
  });

  it('reports what goes wrong and still closes its session', async () => {
    const missing = await tether(['cp', 'cli-1:/does/not/exist', tempDir()]);
    // the device's own words, which say where its files root is
    expect(missing).toMatchObject({ code: 1, stderr: expect.stringContaining(`/does/not/exist under the files root ${root} of cli-1`) });
    const outside = await tether(['cp', 'cli-1:../../etc/passwd', tempDir()]);
    expect(outside).toMatchObject({ code: 1, stderr: expect.stringContaining('path_outside_root') });
    // a FIFO (like /dev/null) is never replaced by the renamed download
    const fifo = join(tempDir(), 'fifo');
    execFileSync('mkfifo', [fifo]);
    writeFileSync(join(root, 'small.txt'), 'small\n');
    const special = await tether(['cp', 'cli-1:/small.txt', fifo]);
    expect(special).toMatchObject({ code: 1, stderr: expect.stringContaining(`${fifo} is not a regular file`) });
    expect(lstatSync(fifo).isFIFO()).toBe(true);
    const open = await stack.admin.get('/v1/remote-access/sessions?status=open&device_id=cli-1&protocol=file-transfer');
    expect(open.body.data).toEqual([]);
  });
});

describe('diag', () => {
  it('prints a readable summary, and JSON with --json', async () => {
    const human = await tether(['diag', 'cli-1']);
    expect(human.code).toBe(0);
    for (const heading of ['DISKS', 'INTERFACES', 'PROCESSES']) expect(human.stdout).toContain(heading);
    expect(human.stdout).toMatch(/load [\d.]+ [\d.]+ [\d.]+ +cpu [\d.]+%/);
    const json = await tether(['diag', 'cli-1', 'system.info', '--json']);
    expect(JSON.parse(json.stdout)).toMatchObject({ agent_version: '0.1.0', hostname: expect.any(String) });
    const bad = await tether(['diag', 'cli-1', 'system.reboot']);
    expect(bad).toMatchObject({ code: 2, stderr: expect.stringContaining('unknown diagnostics op system.reboot') });
  });

  it('says when a log tail was cut to fit one reply', async () => {
    const logs = tempDir('tether-cli-logs-');
    writeFileSync(join(logs, 'big.log'), Array.from({ length: 10_000 }, (_, i) => `${i} ${'x'.repeat(500)}`).join('\n') + '\n');
    await stack.onlineDevice('cli-logs', { TETHER_LOG_DIRS: logs });
    const tail = await tether(['diag', 'cli-logs', 'log.tail', '--path', join(logs, 'big.log'), '--lines', '10000']);
    expect(tail.code).toBe(0);
    const shown = tail.stdout.split('\n').filter((l) => l.endsWith('x'));
    expect(tail.stdout).toContain(`(only the newest ${shown.length} lines fit in one reply; older ones were left out)`);
    expect(shown.at(-1)).toMatch(/^9999 x+$/);
    expect(shown.length).toBeLessThan(10_000);
  });
});

/** `tether shell DEVICE` in a real terminal (100x30), once the remote prompt shows. */
async function shellIn(on: Stack, device: string) {
  const term = pty.spawn(process.execPath, [TETHER_BIN, 'shell', device], {
    name: 'xterm-256color',
    cols: 100,
    rows: 30,
    env: { ...process.env, XDG_CONFIG_HOME: configHome, TETHER_SERVER: on.url, TETHER_TOKEN: on.adminToken } as Record<string, string>,
  });
  let output = '';
  term.onData((d) => (output += d));
  const exited = new Promise<number>((resolve) => term.onExit(({ exitCode }) => resolve(exitCode)));
  try {
    // Type once the remote shell shows its prompt (a loaded machine may take a while).
    await waitFor(() => /[$#] $/m.test(output), 'the remote prompt', 20_000);
  } catch (err) {
    term.kill();
    throw err;
  }
  return { term, exited, output: () => output };
}

describe('shell', () => {
  it('runs in a terminal: raw mode, typed commands, and the remote exit code', async () => {
    const { term, exited, output } = await shellIn(stack, 'cli-1');
    try {
      term.write('stty size; echo hello-$((6*7))\r');
      await waitFor(() => /hello-42/.test(output()) && output(), 'the command output', 15_000);
      expect(output()).toMatch(/\b30 100\b/); // the terminal's size reached the remote shell
      term.resize(120, 40);
      // SIGWINCH reaches the client apart from the typed bytes: a `stty size` typed right after
      // the resize may run before the new size arrives, so ask again until it shows.
      await waitFor(
        () => {
          if (/\b40 120\b/.test(output())) return true;
          term.write('stty size\r');
          return false;
        },
        'the resize',
        15_000,
        500,
      );
      term.write('exit 3\r');
      expect(await exited).toBe(3);
    } finally {
      term.kill();
    }
    const open = await stack.admin.get('/v1/remote-access/sessions?status=open&device_id=cli-1&protocol=shell');
    expect(open.body.data).toEqual([]); // closed when the shell ended
  });

  it("says the device's agent stopped when its agent process is stopped, and exits 1", async () => {
    const { agent } = await stack.onlineDevice('cli-agent-stop');
    const shell = await shellIn(stack, 'cli-agent-stop');
    try {
      agent.kill('SIGTERM');
      expect(await shell.exited).toBe(1);
      expect(shell.output()).toContain("tether: the device's agent stopped");
      expect(shell.output()).not.toContain('shutting down');
    } finally {
      shell.term.kill();
    }
    const open = await stack.admin.get('/v1/remote-access/sessions?status=open&device_id=cli-agent-stop');
    expect(open.body.data).toEqual([]); // the client closed its session
  });

  it('says the server is shutting down when the server stops, and exits 1', async () => {
    const own = await startStack();
    try {
      await own.onlineDevice('cli-server-stop');
      const shell = await shellIn(own, 'cli-server-stop');
      try {
        await own.stopServer();
        expect(await shell.exited).toBe(1);
        expect(shell.output()).toContain('tether: the server is shutting down');
        expect(shell.output()).not.toContain('agent stopped');
        // the server closed every session as it stopped: nothing to close, nothing to complain of
        expect(shell.output()).not.toContain('could not close the session');
      } finally {
        shell.term.kill();
      }
    } finally {
      await own.stop();
    }
  });
});

describe('client handling of 429 and 500', () => {
  it('waits Retry-After and retries, saying so; shows the request id of a 500', async () => {
    // A stand-in server that answers as the API does under load: 429 with Retry-After, then 200.
    let calls = 0;
    const server = createServer((req, res) => {
      calls++;
      if (req.url === '/v1/boom') {
        res.writeHead(500, { 'content-type': 'application/json', 'x-request-id': 'req-500' });
        res.end(JSON.stringify({ error: 'internal_error', message: 'internal error. Request ID: req-500', status: 500 }));
      } else if (calls === 1) {
        res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '1' });
        res.end(JSON.stringify({ error: 'rate_limited', message: 'retry in 1 s', status: 429 }));
      } else {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ status: 200, data: { ok: true } }));
      }
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const notices: string[] = [];
      const api = createApiClient({ server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, notice: (l) => notices.push(l) });
      const started = Date.now();
      expect(await api.request('GET', '/v1/me')).toEqual({ ok: true });
      expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
      expect(notices).toEqual(['rate limited by the server; waiting 1 s before trying again']);
      await expect(api.request('GET', '/v1/boom')).rejects.toThrow(/request id req-500/);
    } finally {
      server.close();
    }
  });
});
