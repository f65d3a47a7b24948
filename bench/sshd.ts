/**
 * @module A private OpenSSH server on a high loopback port for side-by-side figures, started
 * only when `sshd` is installed (CI does not need it): its own host key, client key and config
 * in a temp dir, nothing of the machine's ssh setup touched.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, writeFileSync, chmodSync, mkdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { userInfo } from 'node:os';
import { tempDir } from './lib';

const SSHD_PATHS = ['/usr/sbin/sshd', '/usr/local/sbin/sshd'];

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

export interface Sshd {
  port: number;
  /** Options for ssh/scp: port, key, no host key prompts. */
  clientOptions: string[];
  sshOptions: string[];
  stop(): void;
}

export async function startSshd(): Promise<Sshd | undefined> {
  const sshd = SSHD_PATHS.find((p) => existsSync(p));
  if (!sshd) return undefined;
  const dir = tempDir('tether-bench-sshd-');
  for (const [name, type] of [['host', 'ed25519'], ['client', 'ed25519']]) {
    spawnSync('ssh-keygen', ['-q', '-t', type!, '-N', '', '-f', join(dir, name!)]);
  }
  // sshd insists that authorized_keys live where the user's home says; use a file of our own.
  const authorized = join(dir, 'authorized_keys');
  writeFileSync(authorized, readFileSync(join(dir, 'client.pub')));
  chmodSync(authorized, 0o600);
  const port = await freePort();
  const config = join(dir, 'sshd_config');
  writeFileSync(
    config,
    [
      `Port ${port}`,
      'ListenAddress 127.0.0.1',
      `HostKey ${join(dir, 'host')}`,
      `AuthorizedKeysFile ${authorized}`,
      `PidFile ${join(dir, 'sshd.pid')}`,
      'PasswordAuthentication no',
      'PermitRootLogin yes',
      'UsePAM no',
      'StrictModes no',
      'Subsystem sftp internal-sftp',
      '',
    ].join('\n'),
  );
  mkdirSync('/run/sshd', { recursive: true });
  const child = spawn(sshd, ['-D', '-e', '-f', config], { stdio: 'ignore' });
  const known = join(dir, 'known_hosts');
  const common = ['-i', join(dir, 'client'), '-o', 'StrictHostKeyChecking=no', '-o', `UserKnownHostsFile=${known}`, '-o', 'BatchMode=yes'];
  // Wait until it accepts logins.
  for (let i = 0; i < 100; i++) {
    const r = spawnSync('ssh', [...common, '-p', String(port), `${userInfo().username}@127.0.0.1`, 'true']);
    if (r.status === 0) break;
    await new Promise((r2) => setTimeout(r2, 50));
  }
  return {
    port,
    clientOptions: [...common, '-P', String(port)],
    sshOptions: [...common, '-p', String(port)],
    stop: () => child.kill('SIGTERM'),
  };
}
