/** @module A `dockerd` of its own per call (bench/docker.ts): its dirs, socket and bridge. */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { waitFor } from '../wait';

import { type DockerDaemon, stoppers, dockerPrograms, ip, isAlive, stopPid, spawnTracked, unmountUnder, pingOk } from './processes';

const BRIDGE_PREFIX = 'tether-dk';
const BRIDGE_SLOTS = 64;

/**
 * Takes a free bridge slot N: creates `tether-dkN` with 172.31.N.1/24 (the name is the lock
 * between parallel test files) and labels it with its owners' pids and the daemon's dir. A slot
 * whose owners are all dead (a test process killed outright) is taken back, its dir removed.
 */
function takeBridge(dir: string): { bridge: string; subnet: string; label: (dockerdPid: number) => void } {
  const label = (bridge: string, pids: number[]) => ip(['link', 'set', 'dev', bridge, 'alias', `tether-test owner=${pids.join(',')} dir=${dir}`]);
  for (let n = 0; n < BRIDGE_SLOTS; n++) {
    const bridge = `${BRIDGE_PREFIX}${n}`;
    if (!ip(['link', 'add', 'name', bridge, 'type', 'bridge']).ok) {
      const info = ip(['-j', 'link', 'show', 'dev', bridge]);
      const alias = info.ok ? ((JSON.parse(info.out) as Array<{ ifalias?: string }>)[0]?.ifalias ?? '') : '';
      const owner = /^tether-test owner=([\d,]+) dir=(\S+)$/.exec(alias);
      // No label yet: another file is setting it up right now.
      if (!owner || owner[1]!.split(',').map(Number).some(isAlive)) continue;
      const staleDir = owner[2]!;
      if (staleDir.startsWith(join(tmpdir(), 'tether-docker-'))) {
        unmountUnder(staleDir);
        rmSync(staleDir, { recursive: true, force: true });
      }
      ip(['link', 'del', bridge]);
      if (!ip(['link', 'add', 'name', bridge, 'type', 'bridge']).ok) continue;
    }
    const setUp = [label(bridge, [process.pid]), ip(['addr', 'add', `172.31.${n}.1/24`, 'dev', bridge]), ip(['link', 'set', 'dev', bridge, 'up'])];
    const failed = setUp.find((r) => !r.ok);
    if (failed) {
      ip(['link', 'del', bridge]);
      throw new Error(`could not set up the bridge ${bridge}: ${failed.out}`);
    }
    return { bridge, subnet: `172.31.${n}.0/24`, label: (dockerdPid) => label(bridge, [process.pid, dockerdPid]) };
  }
  throw new Error(`no free bridge among ${BRIDGE_PREFIX}0..${BRIDGE_SLOTS - 1}`);
}

/** A dockerd of its own (dirs, socket, bridge), answering `/_ping`. */
export async function startDocker(): Promise<DockerDaemon> {
  const { dockerd, dockerProxy: proxy } = await dockerPrograms();
  const dir = mkdtempSync(join(tmpdir(), 'tether-docker-'));
  const socketPath = join(dir, 'docker.sock');
  const configFile = join(dir, 'daemon.json');
  writeFileSync(configFile, JSON.stringify({ 'deprecated-key-path': join(dir, 'key.json') }));
  let net: ReturnType<typeof takeBridge> | undefined;
  let started: ReturnType<typeof spawnTracked> | undefined;
  let containerdPid: number | undefined;
  const cleanUp = async () => {
    if (started?.child.pid) {
      // dockerd's own containerd, which outlives a dockerd killed with SIGKILL.
      const pidFile = join(dir, 'exec', 'containerd', 'containerd.pid');
      containerdPid ??= existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8').trim()) || undefined : undefined;
      await stopPid(started.child.pid, 20_000);
    }
    if (containerdPid) await stopPid(containerdPid, 5_000);
    unmountUnder(dir);
    rmSync(dir, { recursive: true, force: true });
    if (net) ip(['link', 'del', net.bridge]);
  };
  try {
    net = takeBridge(dir);
    const namespace = `${net.bridge}-${process.pid}`;
    const args = [
      `--data-root=${join(dir, 'data')}`,
      `--exec-root=${join(dir, 'exec')}`,
      `--pidfile=${join(dir, 'docker.pid')}`,
      `--host=unix://${socketPath}`,
      `--config-file=${configFile}`,
      `--bridge=${net.bridge}`,
      '--iptables=false',
      '--ip-forward=false',
      '--ip-masq=false',
      `--userland-proxy-path=${proxy}`,
      `--containerd-namespace=${namespace}`,
      `--containerd-plugins-namespace=${namespace}-plugins`,
      '--shutdown-timeout=3',
      '--log-level=warn',
    ];
    // Only the system's search path: containerd, runc and docker-proxy are the package's.
    const env = { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', HOME: dir, TMPDIR: dir };
    started = spawnTracked(dockerd, args, env);
    net.label(started.child.pid!);
    const { exited, log } = started;
    await waitFor(
      async () => {
        if (exited()) throw new Error(`dockerd exited:\n${log()}`);
        return pingOk(socketPath);
      },
      'dockerd to answer /_ping',
      60_000,
      50,
    );
    const pidFile = join(dir, 'exec', 'containerd', 'containerd.pid');
    containerdPid = existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8').trim()) || undefined : undefined;
  } catch (err) {
    await cleanUp().catch(() => undefined);
    throw err;
  }
  const docker = new Docker({ socketPath });
  const pid = started.child.pid!;
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      stoppers.delete(stop);
      if (isAlive(pid)) {
        const containers = await docker.listContainers({ all: true }).catch(() => []);
        await Promise.allSettled(containers.map((c) => docker.getContainer(c.Id).remove({ force: true, v: true })));
      }
      await cleanUp();
    })());
  stoppers.add(stop);
  return { host: `unix://${socketPath}`, socketPath, pid, docker, bridge: net.bridge, subnet: net.subnet, stop };
}
