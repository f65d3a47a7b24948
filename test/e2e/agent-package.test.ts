/**
 * The agent as one file (CONTRACT 10.4, issue 32): `scripts/package.mjs` builds
 * dist/tether-agent-linux-x64, which runs with no Node.js on its PATH, comes online, serves a
 * shell in a real PTY (node-pty inside) and diagnostics; and the Debian package around it.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, tempDir, type Stack } from '../helpers/stack';
import { connectStream } from '../helpers/stream';

const repo = resolve(__dirname, '../..');
const { version } = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as { version: string };
const exe = join(repo, 'dist', 'tether-agent-linux-x64');
const deb = join(repo, 'dist', `tether-agent_${version}_amd64.deb`);

/** A PATH holding only what a shell session needs: a shell and a few tools, and no node. */
function nodelessPath(): string {
  const bin = tempDir('tether-nonode-');
  for (const tool of ['sh', 'bash', 'cat', 'echo', 'ls', 'env', 'id', 'uname']) {
    const found = ['/bin', '/usr/bin'].map((d) => join(d, tool)).find((p) => existsSync(p));
    if (found) symlinkSync(found, join(bin, tool));
  }
  return bin;
}

let stack: Stack;
beforeAll(async () => {
  // `npm run package` without its scripts/build.mjs: the executable is bundled from the sources
  // (the other end-to-end tests' dist/ bundles are built before the tests, as for them).
  execFileSync(process.execPath, ['scripts/package.mjs'], { cwd: repo, stdio: ['ignore', 'ignore', 'pipe'] });
  stack = await startStack();
}, 300_000);
afterAll(() => stack?.stop());

describe('the one-file agent', () => {
  it('prints its version', () => {
    expect(execFileSync(exe, ['--version'], { env: { PATH: nodelessPath() } }).toString()).toBe(`${version}\n`);
  });

  it('runs with no node on its PATH: online, a shell in a real PTY, diagnostics', async () => {
    const path = nodelessPath();
    // The PATH really has no node, and the executable is not a script for one.
    expect(spawnSync('sh', ['-c', 'command -v node'], { env: { PATH: path } }).status).not.toBe(0);
    expect(readFileSync(exe).subarray(0, 4)).toEqual(Buffer.from([0x7f, 0x45, 0x4c, 0x46]));
    const home = tempDir('tether-sea-home-');
    const token = await stack.addDevice('sea-1');
    const agent = spawn(exe, ['--server', stack.url, '--device-id', 'sea-1'], {
      cwd: home,
      env: { PATH: path, HOME: home, TMPDIR: home, SHELL: '/bin/sh', TETHER_DEVICE_TOKEN: token, TETHER_STATE_DIR: join(home, 'state') },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    agent.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise((done) => agent.once('exit', done));
    try {
      await stack.waitForStatus('sea-1', 'online', 20_000);
      const shell = (await stack.admin.post('/v1/remote-access/sessions', { device_id: 'sea-1', protocol: 'shell' })).body.data;
      const client = connectStream(shell.websocket_url);
      await client.opened;
      // A real terminal: `tty` names a pseudo-terminal, and the shell echoes what it computes.
      client.send(Buffer.from('echo sea-$((40+2)) $(test -t 0 && echo tty)\n'));
      await client.waitForOutput(/sea-42 tty/);
      await stack.admin.del(`/v1/remote-access/sessions/${shell.session_id}`);

      const diag = (await stack.admin.post('/v1/remote-access/sessions', { device_id: 'sea-1', protocol: 'diagnostics' })).body.data;
      const d = connectStream(diag.websocket_url);
      await d.opened;
      const info = await d.request('system.info');
      expect(info.ok).toBe(true);
      expect(info.result).toMatchObject({ agent_version: version });
      await stack.admin.del(`/v1/remote-access/sessions/${diag.session_id}`);
      // The PTY library came from the executable, through a private cache named by its hash.
      expect(stderr).not.toMatch(/cannot load the PTY library/);
      const library = readFileSync(join(repo, 'node_modules', 'node-pty', 'build', 'Release', 'pty.node'));
      const cache = join(home, `tether-agent-${process.getuid!()}`);
      expect(statSync(cache).mode & 0o777).toBe(0o700);
      expect(readdirSync(cache)).toEqual([`pty-${createHash('sha256').update(library).digest('hex')}.node`]);
    } finally {
      agent.kill('SIGTERM');
      await exited;
    }
  }, 60_000);
});

describe('an agent whose token was rotated', () => {
  it('is told the token was replaced and where the new one comes from', async () => {
    const { agent, token: old } = await stack.onlineDevice('rot-1');
    const rotated = await stack.admin.post('/v1/devices/rot-1/agent-token', {});
    expect(rotated.status).toBe(200);
    const fresh = rotated.body.data.agent_token as string;
    await agent.waitForLine(/the server replaced this device's agent token: the new one is what `tether device rotate-token rot-1` printed/);
    // Its tries with the old token are refused; after three, it says why once.
    const refused = await agent.waitForLine(/the server refuses this agent's token \(401\)/, 20_000);
    expect(refused).toContain("the device's token was replaced: the new one is what `tether device rotate-token rot-1` printed");
    expect(refused).toContain('put the token in TETHER_DEVICE_TOKEN (/etc/tether/agent.env for the packaged agent) and restart the agent');
    expect(refused).not.toContain('device add');
    await agent.stop();

    // Started again on the old token, the agent cannot tell a replaced token from an unknown
    // device (the server answers both alike): it names both, the rotation first.
    const again = stack.startAgent('rot-1', old);
    const line = await again.waitForLine(/the server refuses this agent's token \(401\)/, 20_000);
    expect(line).toContain("the device's token was replaced (`tether device rotate-token rot-1` prints a new one)");
    expect(line).toContain('or the device is not registered (`tether device add rot-1` registers it and prints its token)');
    await again.stop();
    stack.startAgent('rot-1', fresh);
    await stack.waitForStatus('rot-1', 'online');
  }, 60_000);
});

describe('the Debian package', () => {
  const dpkg = (...args: string[]) => execFileSync('dpkg-deb', args).toString();

  it('describes itself and keeps the settings file as a conffile', () => {
    const info = dpkg('--info', deb);
    expect(info).toMatch(/^ Package: tether-agent$/m);
    expect(info).toMatch(new RegExp(`^ Version: ${version.replace(/\./g, '\\.')}$`, 'm'));
    expect(info).toMatch(/^ Architecture: amd64$/m);
    expect(info).toMatch(/^ Maintainer: .+$/m);
    expect(info).toMatch(/^ Description: .+$/m);
    for (const script of ['postinst', 'prerm', 'postrm', 'conffiles']) expect(info).toContain(` ${script}`);
    const control = tempDir('tether-deb-control-');
    dpkg('-e', deb, control);
    expect(readFileSync(join(control, 'conffiles'), 'utf8').trim()).toBe('/etc/tether/agent.env');
    for (const script of ['postinst', 'prerm', 'postrm']) expect(statSync(join(control, script)).mode & 0o777).toBe(0o755);
    expect(readFileSync(join(control, 'postinst'), 'utf8')).toMatch(/useradd --system|adduser --system/);
  });

  it('holds the executable, the unit and the settings template, with their modes', () => {
    const contents = dpkg('--contents', deb);
    const entry = (path: string) => contents.split('\n').find((l) => l.endsWith(` .${path}`));
    expect(entry('/usr/bin/tether-agent')).toMatch(/^-rwxr-xr-x root\/root/);
    expect(entry('/lib/systemd/system/tether-agent.service')).toMatch(/^-rw-r--r-- root\/root/);
    // 0640 root:root in the archive; postinst hands the group to tether-agent.
    expect(entry('/etc/tether/agent.env')).toMatch(/^-rw-r----- root\/root/);

    const root = tempDir('tether-deb-root-');
    dpkg('-x', deb, root);
    expect(execFileSync(join(root, 'usr/bin/tether-agent'), ['--version'], { env: { PATH: nodelessPath() } }).toString()).toBe(`${version}\n`);
    const unit = readFileSync(join(root, 'lib/systemd/system/tether-agent.service'), 'utf8');
    expect(unit).toMatch(/^ExecStart=\/usr\/bin\/tether-agent$/m);
    expect(unit).toMatch(/^EnvironmentFile=\/etc\/tether\/agent.env$/m);
    expect(unit).toMatch(/^User=tether-agent$/m);
    expect(unit).toMatch(/^Restart=always$/m);
    expect(unit).toMatch(/^NoNewPrivileges=yes$/m);
    expect(unit).toMatch(/^ProtectSystem=strict$/m);
    const env = readFileSync(join(root, 'etc/tether/agent.env'), 'utf8');
    for (const name of ['TETHER_SERVER', 'TETHER_DEVICE_ID', 'TETHER_DEVICE_TOKEN', 'TETHER_FILES_ROOT', 'TETHER_LOG_DIRS', 'TETHER_FORWARD_ALLOW']) {
      expect(env).toMatch(new RegExp(`^#\\s*${name}=`, 'm'));
    }
  });

  it('has a unit systemd accepts', (ctx) => {
    const analyze = spawnSync('sh', ['-c', 'command -v systemd-analyze']);
    if (analyze.status !== 0) return ctx.skip('systemd-analyze is not installed');
    const root = tempDir('tether-deb-verify-');
    dpkg('-x', deb, root);
    const unit = join(root, 'lib/systemd/system/tether-agent.service');
    // The unit names /usr/bin/tether-agent; verify checks that it exists, so point it at the copy.
    const copy = join(root, 'tether-agent.service');
    const text = readFileSync(unit, 'utf8').replace('ExecStart=/usr/bin/tether-agent', `ExecStart=${join(root, 'usr/bin/tether-agent')}`);
    writeFileSync(copy, text);
    const result = spawnSync('systemd-analyze', ['verify', '--man=no', copy], { encoding: 'utf8' });
    // Without a running systemd (containers) verify still parses the unit: unknown keys and bad
    // values are reported per line; that is what this checks.
    const problems = `${result.stdout}${result.stderr}`.split('\n').filter((l) => new RegExp(`${copy}:\\d+`).test(l));
    expect(problems).toEqual([]);
  });
});
