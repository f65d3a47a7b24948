/** @module A Docker registry on a loopback port (bench/docker.ts), its storage in a temp dir. */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitFor } from '../wait';

import { type Registry, stoppers, dockerPrograms, isAlive, stopPid, spawnTracked } from './processes';
import { freePort } from '../free-port';

function getStatus(url: string): Promise<number | undefined> {
  return new Promise((resolve) => {
    const req = request(url, { timeout: 2000 }, (res) => {
      res.resume();
      resolve(res.statusCode);
    });
    req.on('error', () => resolve(undefined));
    req.on('timeout', () => req.destroy());
    req.end();
  });
}

/** Removes the storage of registries whose test process was killed outright (its `owner` pid is gone). */
function sweepRegistryDirs(): void {
  for (const name of readdirSync(tmpdir())) {
    if (!name.startsWith('tether-registry-')) continue;
    const dir = join(tmpdir(), name);
    let owner: number;
    try {
      owner = Number(readFileSync(join(dir, 'owner'), 'utf8'));
    } catch {
      continue; // being set up right now, or not ours
    }
    if (owner > 0 && !isAlive(owner)) rmSync(dir, { recursive: true, force: true });
  }
}

/** The Debian `docker-registry` (distribution 2.8) on a free loopback port, storing in a temp dir; answers `/v2/`. */
export async function startRegistry(): Promise<Registry> {
  const bin = (await dockerPrograms()).registry;
  sweepRegistryDirs();
  const dir = mkdtempSync(join(tmpdir(), 'tether-registry-'));
  writeFileSync(join(dir, 'owner'), String(process.pid));
  // The registry reads REGISTRY_* variables over its file: it gets none of the environment.
  const env = { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', HOME: dir };
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const config = join(dir, 'config.yml');
    writeFileSync(
      config,
      [
        'version: 0.1',
        'log:',
        '  level: warn',
        '  accesslog:',
        '    disabled: true',
        'storage:',
        '  filesystem:',
        `    rootdirectory: ${join(dir, 'data')}`,
        '  delete:',
        '    enabled: true',
        '  maintenance:',
        '    uploadpurging:',
        '      enabled: false',
        'http:',
        `  addr: 127.0.0.1:${port}`,
        '',
      ].join('\n'),
    );
    mkdirSync(join(dir, 'data'), { recursive: true });
    const { child, log, exited } = spawnTracked(bin, ['serve', config], env);
    const pid = child.pid!;
    const stopNow = () => stopPid(pid, 5_000);
    try {
      await waitFor(
        async () => {
          if (exited()) throw new Error(`docker-registry exited:\n${log()}`);
          return (await getStatus(`http://127.0.0.1:${port}/v2/`)) === 200;
        },
        'docker-registry to answer /v2/',
        20_000,
        50,
      );
    } catch (err) {
      await stopNow();
      // Someone took the port between freePort and the registry's listen: another one.
      if (attempt < 3 && /address already in use/.test(log())) continue;
      rmSync(dir, { recursive: true, force: true });
      throw err;
    }
    let stopping: Promise<void> | undefined;
    const stop = () =>
      (stopping ??= (async () => {
        stoppers.delete(stop);
        await stopNow();
        rmSync(dir, { recursive: true, force: true });
      })());
    stoppers.add(stop);
    return { url: `127.0.0.1:${port}`, pid, stop };
  }
}
