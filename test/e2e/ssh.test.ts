/**
 * OpenSSH through tether (issue 32, CONTRACT 10.4) end to end: a real sshd on the device's side
 * (the system's openssh-server, on a free loopback port with its own host key and config), reached
 * with the real `ssh` and `scp` through `tether forward --stdio` and a real server and agent: a
 * command, two connections at once over the one session, a few MB copied both ways byte for byte,
 * the session closed once they are done, and `tether ssh-config` used as ssh's config file.
 * forward-stdio.test.ts tests the command itself (exit codes, the master) without ssh.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../bench/free-port';
import { mastersGone } from '../helpers/forward-masters';
import { forwardStack } from '../helpers/forward-stack';
import { runTether, TETHER_BIN } from '../helpers/processes';
import { tempDir, type Stack } from '../helpers/stack';
import { systemProgram } from '../helpers/system-program';
import { waitFor } from '../helpers/wait';

const SSHD = systemProgram(['/usr/sbin/sshd'], 'openssh-server', 'the tests of ssh through tether');
const SSH = systemProgram(['/usr/bin/ssh'], 'openssh-client', 'the tests of ssh through tether');
const SCP = systemProgram(['/usr/bin/scp'], 'openssh-client', 'the tests of ssh through tether');
const USER = userInfo().username;
const DEVICE = 'ssh-dev';

const forward = forwardStack(DEVICE, 'ssh-eng', 'tether-ssh-config-');
const { runDir, env, forwardSessions } = forward;
let stack: Stack;
let sshd: ChildProcess;
let sshdPort: number;
const dir = tempDir('tether-ssh-');

function keygen(file: string): void {
  const r = spawnSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'tether-test', '-f', file]);
  if (r.status !== 0) throw new Error(`ssh-keygen: ${r.stderr.toString()}`);
}

/** sshd on 127.0.0.1:`port` with its own key and config, in the foreground (stopped by pid). */
async function startSshd(): Promise<void> {
  keygen(join(dir, 'host_key'));
  keygen(join(dir, 'id_ed25519'));
  writeFileSync(join(dir, 'authorized_keys'), readFileSync(join(dir, 'id_ed25519.pub')));
  sshdPort = await freePort();
  const conf = [
    'ListenAddress 127.0.0.1',
    `Port ${sshdPort}`,
    `HostKey ${join(dir, 'host_key')}`,
    `AuthorizedKeysFile ${join(dir, 'authorized_keys')}`,
    `PidFile ${join(dir, 'sshd.pid')}`,
    'UsePAM no',
    'StrictModes no',
    'PasswordAuthentication no',
    'KbdInteractiveAuthentication no',
    'PubkeyAuthentication yes',
    'PermitRootLogin prohibit-password', // CI runs the tests as root
    'Subsystem sftp internal-sftp',
    'LogLevel ERROR',
  ];
  writeFileSync(join(dir, 'sshd_config'), `${conf.join('\n')}\n`);
  // As root, sshd wants its privilege separation directory.
  if (process.getuid?.() === 0 && !existsSync('/run/sshd')) spawnSync('mkdir', ['-p', '-m', '0755', '/run/sshd']);
  sshd = spawn(SSHD, ['-D', '-e', '-f', join(dir, 'sshd_config')], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  sshd.stderr!.on('data', (d: Buffer) => (log += d.toString()));
  await waitFor(
    () =>
      new Promise<boolean>((resolve) => {
        if (sshd.exitCode !== null) throw new Error(`sshd exited: ${log}`);
        const s = connect(sshdPort, '127.0.0.1', () => resolve(!!s.destroy()));
        s.on('error', () => resolve(false));
      }),
    'sshd to listen',
  );
}

/** The ssh options every call takes: the test's key and known hosts, no config of the user's. */
const sshOptions = (proxy: string) => [
  '-F',
  '/dev/null',
  '-o',
  `ProxyCommand=${proxy}`,
  '-o',
  `UserKnownHostsFile=${join(dir, 'known_hosts')}`,
  '-o',
  'StrictHostKeyChecking=accept-new',
  '-o',
  'BatchMode=yes',
  '-o',
  'IdentitiesOnly=yes',
  '-i',
  join(dir, 'id_ed25519'),
];
const proxy = (extra = '') => `${process.execPath} ${TETHER_BIN} forward --stdio --persist 1${extra} %n 127.0.0.1:${sshdPort}`;

/** Runs a program to its end with the test's tether settings: exit code, stdout, stderr. */
function run(program: string, args: string[], input?: string) {
  const child = spawn(program, args, { env: { ...process.env, ...env() }, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  if (input !== undefined) child.stdin.end(input);
  const done = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.once('close', (code) => resolve({ code, stdout, stderr })),
  );
  return { child, done };
}

const sha256 = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');

beforeAll(async () => {
  await startSshd();
  stack = await forward.start();
}, 60_000);

afterAll(async () => {
  await forward.stop();
  sshd?.kill('SIGTERM');
});

describe('ssh through tether forward --stdio', () => {
  it('runs a command on the device with the real ssh', async () => {
    const { done } = run(SSH, [...sshOptions(proxy()), '-l', USER, DEVICE, 'echo hello']);
    const r = await done;
    expect(r.stderr).not.toMatch(/tether:/);
    expect(r).toMatchObject({ code: 0, stdout: 'hello\n' });
  }, 30_000);

  it('carries two ssh connections at once over the one session', async () => {
    const first = run(SSH, [...sshOptions(proxy()), '-l', USER, DEVICE, 'read x; echo "got $x"']);
    // The second runs and ends while the first is held open, waiting for its line.
    await waitFor(async () => (await forwardSessions()).some((s) => s.status === 'open'), 'the session to open');
    const second = await run(SSH, [...sshOptions(proxy()), '-l', USER, DEVICE, 'echo second; hostname >/dev/null']).done;
    expect(second).toMatchObject({ code: 0, stdout: 'second\n' });
    expect(first.child.exitCode).toBeNull();
    first.child.stdin.end('one\n');
    expect(await first.done).toMatchObject({ code: 0, stdout: 'got one\n' });
    const open = (await forwardSessions()).filter((s) => s.status === 'open');
    expect(open.length).toBeLessThanOrEqual(1);
  }, 30_000);

  it('copies a few MB both ways with scp, byte for byte, and closes the session afterwards', async () => {
    const local = join(dir, 'up.bin');
    const remote = join(dir, 'on-device.bin');
    const back = join(dir, 'down.bin');
    writeFileSync(local, randomBytes(5 * 1024 * 1024 + 123));
    const scp = (from: string, to: string) => run(SCP, ['-q', ...sshOptions(proxy()), from, to]).done;
    expect(await scp(local, `${USER}@${DEVICE}:${remote}`)).toMatchObject({ code: 0 });
    expect(sha256(remote)).toBe(sha256(local));
    expect(await scp(`${USER}@${DEVICE}:${remote}`, back)).toMatchObject({ code: 0 });
    expect(sha256(back)).toBe(sha256(local));
    // Nothing connected: the master closes the session after --persist and exits.
    await waitFor(async () => (await forwardSessions()).every((s) => s.status === 'closed'), 'every port-forward session to be closed');
    expect((await forwardSessions()).length).toBeGreaterThan(0);
    await mastersGone(runDir);
    expect(readdirSync(runDir).filter((f) => f.endsWith('.sock'))).toEqual([]);
  }, 60_000);

  it('uses the Host blocks of tether ssh-config as an ssh config file', async () => {
    const r = await runTether(['ssh-config', DEVICE, '--user', USER, '--port', String(sshdPort)], env());
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`Host ${DEVICE}\n  HostName ${DEVICE}\n  User ${USER}\n  ProxyCommand `);
    expect(r.stdout).toContain(`forward --stdio %h 127.0.0.1:${sshdPort}`);
    expect(r.stdout).toContain(`HostKeyAlias ${DEVICE}`);
    const file = join(dir, 'ssh_config');
    const mine = [
      `UserKnownHostsFile ${join(dir, 'known_hosts')}`,
      'StrictHostKeyChecking accept-new',
      'BatchMode yes',
      `IdentityFile ${join(dir, 'id_ed25519')}`,
    ];
    writeFileSync(file, `${r.stdout}\nHost *\n${mine.map((l) => `  ${l}`).join('\n')}\n`);
    const ssh = await run(SSH, ['-F', file, DEVICE, 'echo through-config']).done;
    expect(ssh).toMatchObject({ code: 0, stdout: 'through-config\n' });
  }, 30_000);

  it('prints a block per device the caller sees, with a prefix', async () => {
    await stack.addDevice('ssh-other');
    const r = await runTether(['ssh-config', '--prefix', 'tether-'], env());
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`Host tether-${DEVICE}\n  HostName ${DEVICE}\n`);
    expect(r.stdout).toContain('Host tether-ssh-other\n  HostName ssh-other\n');
    expect(r.stdout).toContain('  ProxyCommand ');
  });
});
