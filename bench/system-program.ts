/**
 * @module A program a benchmark or a test needs from the system's packages (nats-server for the
 * cluster, Chromium for the console): found where Debian puts it, installed with apt-get when run
 * as root (as CI does), and otherwise a one-line error naming the package to install. Nothing is
 * downloaded from anywhere but the system's package registry. (The tests use this one through
 * test/helpers/: the product and its benchmarks never import the tests.)
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

export function systemProgram(paths: string[], debianPackage: string, purpose: string): string {
  const found = () => paths.find((p) => existsSync(p));
  if (found()) return found()!;
  if (process.getuid?.() === 0 && existsSync('/usr/bin/apt-get')) {
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    const install = () => spawnSync('apt-get', ['install', '-y', '--no-install-recommends', debianPackage], { stdio: 'ignore', env }).status;
    // A fresh machine may have no package lists yet.
    if (install() !== 0) {
      spawnSync('apt-get', ['update'], { stdio: 'ignore', env });
      install();
    }
    if (found()) return found()!;
  }
  throw new Error(`${purpose} need the Debian package ${debianPackage}: install it (apt-get install ${debianPackage}) and run the tests again`);
}
