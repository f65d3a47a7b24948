/**
 * @module A private OpenSSH server on a high loopback port for side-by-side figures, started
 * only when `sshd` is installed (CI does not need it): its own host key, client key and configs
 * in a temp dir, nothing of the machine's ssh setup touched. Clients reach it directly and through
 * itself as a jump host, the way a device behind NAT is reached over a bastion.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, writeFileSync, chmodSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { userInfo } from 'node:os';
import { tempDir } from './lib';
import { freePort } from './free-port';

const SSHD_PATHS = ['/usr/sbin/sshd', '/usr/local/sbin/sshd'];

/** Host names in `Sshd.options`' config: the sshd itself, and the same sshd reached through it. */
export const DIRECT = 'bastion';
export const JUMPED = 'device';

export interface Sshd {
  /**
   * `-F` and an ssh_config for ssh and scp: host `bastion` is this sshd, host `device` is this
   * sshd again through `bastion` as a jump host (ProxyJump), as a device behind NAT is reached via
   * a bastion. A config file because `-J` passes no `-i`/`-o` options on to the jump connection,
   * while ssh hands the jump its `-F`.
   */
  options: string[];
  stop(): void;
}

let installAllowed = false;

/** Lets a full run install `openssh-server` (the quick run inside `npm test` never installs). */
export function allowSshdInstall(): void {
  installAllowed = true;
}

/**
 * The sshd binary; in a full run as root, Debian's `openssh-server` is installed when it is
 * missing (its service is not started: Debian's policy-rc.d in containers; ours runs on its own port).
 */
function findSshd(): string | undefined {
  const found = () => SSHD_PATHS.find((p) => existsSync(p));
  if (found() || !installAllowed || process.getuid?.() !== 0 || !existsSync('/usr/bin/apt-get')) return found();
  process.stderr.write('bench: installing openssh-server for the OpenSSH figures\n');
  spawnSync('apt-get', ['install', '-y', '--no-install-recommends', 'openssh-server'], {
    stdio: 'ignore',
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
  return found();
}

export async function startSshd(): Promise<Sshd | undefined> {
  const sshd = findSshd();
  if (!sshd) {
    process.stderr.write('bench: OpenSSH figures skipped: install the openssh-server package\n');
    return undefined;
  }
  const dir = tempDir('tether-bench-sshd-');
  for (const [name, type] of [
    ['host', 'ed25519'],
    ['client', 'ed25519'],
  ]) {
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
  const clientConfig = join(dir, 'ssh_config');
  writeFileSync(
    clientConfig,
    [
      `Host ${JUMPED}`,
      `  ProxyJump ${DIRECT}`,
      `Host ${DIRECT} ${JUMPED}`,
      '  HostName 127.0.0.1',
      `  Port ${port}`,
      `  User ${userInfo().username}`,
      `  IdentityFile ${join(dir, 'client')}`,
      '  IdentitiesOnly yes',
      '  StrictHostKeyChecking no',
      `  UserKnownHostsFile ${join(dir, 'known_hosts')}`,
      '  BatchMode yes',
      '  LogLevel ERROR',
      '',
    ].join('\n'),
  );
  mkdirSync('/run/sshd', { recursive: true });
  const child = spawn(sshd, ['-D', '-e', '-f', config], { stdio: 'ignore' });
  const options = ['-F', clientConfig];
  // Wait until it accepts logins.
  for (let i = 0; i < 100; i++) {
    if (spawnSync('ssh', [...options, DIRECT, 'true']).status === 0) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  return { options, stop: () => child.kill('SIGTERM') };
}
