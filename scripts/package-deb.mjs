// The Debian package of the one-file agent (scripts/package.mjs): the executable, the systemd
// unit and the settings template from deploy/debian/, built with dpkg-deb (docs/agent-package.md).
import { execFileSync } from 'node:child_process';
import { chmod, copyFile, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** Builds `work/tether-agent_VERSION_amd64.deb` around `exe` from the files in `src`; returns its path. */
export async function buildDeb({ exe, version, src, work }) {
  const root = join(work, 'deb');
  const place = async (from, to, mode) => {
    await mkdir(join(root, to, '..'), { recursive: true, mode: 0o755 });
    await copyFile(from, join(root, to));
    await chmod(join(root, to), mode);
  };
  await place(exe, 'usr/bin/tether-agent', 0o755);
  await place(join(src, 'tether-agent.service'), 'lib/systemd/system/tether-agent.service', 0o644);
  // 0640 here; postinst gives the group to tether-agent, which does not exist when this is built.
  await place(join(src, 'agent.env'), 'etc/tether/agent.env', 0o640);
  for (const script of ['postinst', 'prerm', 'postrm']) await place(join(src, script), `DEBIAN/${script}`, 0o755);
  await place(join(src, 'conffiles'), 'DEBIAN/conffiles', 0o644);
  const installedKiB = Math.ceil((await stat(exe)).size / 1024) + 8;
  const control = (await readFile(join(src, 'control'), 'utf8')).replace('@VERSION@', version).replace('@INSTALLED_SIZE@', String(installedKiB));
  await writeFile(join(root, 'DEBIAN', 'control'), control, { mode: 0o644 });
  // Directories as a package has them, whatever this machine's umask.
  execFileSync('find', [root, '-type', 'd', '-exec', 'chmod', '0755', '{}', '+']);

  const deb = join(work, `tether-agent_${version}_amd64.deb`);
  // --root-owner-group: every file root:root without fakeroot; xz: the executable packs to a third.
  execFileSync('dpkg-deb', ['--root-owner-group', '-Zxz', '--build', root, deb], { stdio: ['ignore', 'ignore', 'inherit'] });
  return deb;
}
