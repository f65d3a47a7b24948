/**
 * `tether forward --stdio DEVICE HOST:PORT` (issue 32, CONTRACT 10.4) without ssh: a real server
 * and agent, TCP services on the device's side (this host's loopback), and the real command with
 * its detached master: half-close, two first callers at once ending with one master and one
 * session, targets added to an idle master's session and refused while it is busy, a 409
 * explained, and the exit codes (1, 2, and 255 for a server unreachable or lost under it).
 * `forward --quiet` is here too. ssh.test.ts runs the real ssh and scp through it.
 */
import { connect, createServer, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../bench/free-port';
import { mastersGone } from '../helpers/forward-masters';
import { forwardStack } from '../helpers/forward-stack';
import { runTether, startProcess } from '../helpers/processes';
import { startStack, type Stack } from '../helpers/stack';
import { waitFor } from '../helpers/wait';

const DEVICE = 'stdio-dev';
const forward = forwardStack(DEVICE, 'stdio-eng', 'tether-stdio-config-');
const { config, runDir, env, forwardSessions } = forward;
let stack: Stack;
let echo: Server;
let echoPort: number;

beforeAll(async () => {
  echo = createServer({ allowHalfOpen: true }, (s) => {
    s.on('error', () => {});
    s.pipe(s);
  });
  await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
  echoPort = (echo.address() as { port: number }).port;
  stack = await forward.start();
}, 60_000);

afterAll(async () => {
  await forward.stop();
  echo?.close();
});

describe('tether forward --stdio', () => {
  it('half-closes on stdin EOF and exits 0 when the device side ends', async () => {
    const r = await runTether(['forward', '--stdio', '--persist', '0', DEVICE, `127.0.0.1:${echoPort}`], env(), 'ping\n');
    expect(r).toMatchObject({ code: 0, stdout: 'ping', stderr: '' });
  }, 30_000);

  it('starts one master, and opens one session, for two first callers at once', async () => {
    await mastersGone(runDir, 'earlier masters to exit');
    const before = (await forwardSessions()).length;
    const call = (text: string) => runTether(['forward', '--stdio', '--persist', '1', DEVICE, `127.0.0.1:${echoPort}`], env(), text);
    const [a, b] = await Promise.all([call('first\n'), call('second\n')]);
    expect(a).toMatchObject({ code: 0, stdout: 'first' });
    expect(b).toMatchObject({ code: 0, stdout: 'second' });
    expect((await forwardSessions()).length).toBe(before + 1);
  }, 60_000);

  it("adds a target to the master's session while it is idle, and refuses one while connections use it", async () => {
    await mastersGone(runDir, 'earlier masters to exit');
    const other = createServer((s) => {
      s.on('error', () => {});
      s.end('other\n');
    });
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
    const otherTarget = `127.0.0.1:${(other.address() as { port: number }).port}`;
    try {
      const call = (target: string, input: string) => runTether(['forward', '--stdio', '--persist', '3', DEVICE, target], env(), input);
      expect(await call(`127.0.0.1:${echoPort}`, 'a\n')).toMatchObject({ code: 0, stdout: 'a' });
      // The master is still there (persist), idle: it reopens its session with both targets.
      expect(await call(otherTarget, '')).toMatchObject({ code: 0, stdout: 'other' });
      const sessions = (await stack.admin.get(`/v1/remote-access/sessions?device_id=${DEVICE}&protocol=port-forward&status=open`)).body.data;
      expect(sessions.map((s: { targets: string[] }) => s.targets)).toEqual([[`127.0.0.1:${echoPort}`, otherTarget]]);

      // A connection in use: a third target cannot be added now.
      const held = startProcess(['forward', '--stdio', DEVICE, `127.0.0.1:${echoPort}`], env());
      held.child.stdin!.write('held\n');
      await held.waitForLine(/^held$/);
      const third = await call(`localhost:${echoPort}`, '');
      expect(third.code).toBe(1);
      expect(third.stderr).toMatch(/carries 127\.0\.0\.1:\d+, 127\.0\.0\.1:\d+; localhost:\d+ can be added once its 1 connection\(s\) have ended/);
      held.child.stdin!.end();
      expect((await held.exited).code).toBe(0);
    } finally {
      other.close();
    }
    await mastersGone(runDir);
  }, 60_000);

  it('explains a session in the way (409) as the CLI does; forward --quiet prints no forwarding line', async () => {
    await waitFor(async () => (await forwardSessions()).every((s) => s.status === 'closed'), 'earlier sessions to close');
    const port = await freePort();
    const holder = startProcess(['forward', '--quiet', DEVICE, `${port}:127.0.0.1:${echoPort}`], env());
    try {
      await waitFor(async () => (await forwardSessions()).some((s) => s.status === 'open'), 'the forward to open its session');
      const echoed = await waitFor(
        () =>
          new Promise<string | undefined>((resolve) => {
            const s = connect(port, '127.0.0.1', () => s.end('quiet\n'));
            let got = '';
            s.on('data', (d: Buffer) => (got += d.toString()));
            s.on('close', () => resolve(got || undefined));
            s.on('error', () => resolve(undefined));
          }),
        'the quiet forward to carry a connection',
      );
      expect(echoed).toBe('quiet\n');
      const r = await runTether(['forward', '--stdio', '--persist', '0', DEVICE, `127.0.0.1:${echoPort}`], env(), '');
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/a port-forward session is already open for stdio-dev: yours \(sess-[a-z0-9]+\).*\nRun again with --replace/);
    } finally {
      await holder.stop();
    }
    expect(holder.stdout).toEqual([]);
  }, 30_000);

  it('exits 1 naming the problem when the target refuses, 2 on a usage mistake', async () => {
    const closed = await freePort();
    const r = await runTether(['forward', '--stdio', '--persist', '0', DEVICE, `127.0.0.1:${closed}`], env(), '');
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/tether: 127\.0\.0\.1:\d+: the connection failed on the device: refused/);
    const usage = await runTether(['forward', '--stdio', DEVICE, '127.0.0.1:22', '127.0.0.1:23'], env(), '');
    expect(usage.code).toBe(2);
  }, 30_000);

  it('exits 255 when tether cannot be reached, and when the server goes away under it', async () => {
    const nowhere = `http://127.0.0.1:${await freePort()}`;
    const unreachable = await runTether(['forward', '--stdio', '--persist', '0', DEVICE, `127.0.0.1:${echoPort}`], { ...env(), TETHER_SERVER: nowhere }, '');
    expect(unreachable.code).toBe(255);
    expect(unreachable.stderr).toMatch(/^tether: cannot reach /);

    // A server of its own, stopped while a connection is open.
    const other = await startStack();
    try {
      const t = await other.userToken('ssh-eng2', 'platform-engineer');
      await other.onlineDevice('lost-dev');
      const proc = startProcess(['forward', '--stdio', '--persist', '0', 'lost-dev', `127.0.0.1:${echoPort}`], {
        TETHER_SERVER: other.url,
        TETHER_TOKEN: t,
        XDG_CONFIG_HOME: config,
      });
      proc.child.stdin!.write('first\n');
      await proc.waitForLine(/^first$/);
      await other.stopServer();
      expect((await proc.exited).code).toBe(255);
      expect(proc.stderr.join('\n')).toMatch(/tether: the connection to 127\.0\.0\.1:\d+ was lost/);
    } finally {
      await other.stop();
    }
  }, 60_000);
});
