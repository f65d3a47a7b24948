/**
 * Global setup: the system programs the end-to-end tests use (nats-server, Chromium, Docker
 * Engine, HAProxy, the Docker registry, a static busybox for the test images, PostgreSQL, OpenSSH), installed from
 * Debian's packages in one apt-get run before any test file starts, when the tests run as root
 * (as CI does). Test files that each installed their own at the same time fought over dpkg's lock.
 * Not root, or no apt-get: nothing happens here, and a test that needs a missing program says in
 * one line which package to install (test/helpers/system-program.ts).
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

/** Each package, and the paths of which any one says it is installed. */
const PACKAGES: Record<string, string[]> = {
  'nats-server': ['/usr/sbin/nats-server', '/usr/bin/nats-server'],
  chromium: ['/usr/bin/chromium'],
  'docker.io': ['/usr/sbin/dockerd', '/usr/bin/dockerd'],
  haproxy: ['/usr/sbin/haproxy'],
  'docker-registry': ['/usr/bin/docker-registry'],
  'busybox-static': ['/usr/share/doc/busybox-static'],
  iproute2: ['/usr/sbin/ip', '/sbin/ip', '/usr/bin/ip', '/bin/ip'],
  // PostgreSQL's server programs: the `postgres` project and the tests of peers (bench/postgres.ts).
  // OpenSSH through `tether forward --stdio`: a real sshd on the device's side, ssh and scp.
  'openssh-server': ['/usr/sbin/sshd'],
  'openssh-client': ['/usr/bin/scp'],
  postgresql: ['18', '17', '16', '15', '14', '13'].map((v) => `/usr/lib/postgresql/${v}/bin/postgres`),
};

export default function setup(): void {
  if (process.getuid?.() !== 0 || !existsSync('/usr/bin/apt-get')) return;
  const missing = Object.entries(PACKAGES)
    .filter(([, paths]) => !paths.some((p) => existsSync(p)))
    .map(([name]) => name);
  if (missing.length === 0) return;
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const install = () => spawnSync('apt-get', ['install', '-y', '--no-install-recommends', ...missing], { stdio: 'ignore', env }).status;
  // A fresh machine may have no package lists yet.
  if (install() !== 0) {
    spawnSync('apt-get', ['update'], { stdio: 'ignore', env });
    install();
  }
}
