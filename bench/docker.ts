/**
 * @module Real Docker for the `docker` deployment runtime's end-to-end tests and for the
 * deployment benchmark (bench/deploy.ts; the tests use this file through test/helpers/docker.ts:
 * the benchmarks never import the tests): a `dockerd` of the test's
 * own, a registry on a loopback port, and tiny service images built and pushed in the test.
 *
 * Why each choice:
 * - The system's packages, never a download: `dockerd` from Debian's `docker.io`, the registry
 *   from `docker-registry`, the image's only program from `busybox-static`, and `ip` (iproute2),
 *   `setpriv` (util-linux) and `umount` (mount). `dockerPrograms()` finds them through
 *   `systemProgram`, which installs what is missing with apt-get when the tests run as root (CI:
 *   a fresh Debian 12 machine); test files starting in parallel retry while another holds the
 *   dpkg lock, so a file's set-up may take DOCKER_SETUP_TIMEOUT_MS there. Not root: one line
 *   names every missing package (and dockerd needs root anyway).
 * - A daemon per call, never the machine's: its own `--data-root`, `--exec-root`, `--pidfile`,
 *   unix socket and `--config-file` in a temp dir (that file only moves the trust key off the
 *   shared /etc/docker/key.json, and a host's /etc/docker/daemon.json changes nothing), and its
 *   own containerd namespaces: dockerd starts a containerd of its own, but should it find a
 *   system one, two test daemons still never see each other's containers.
 * - A bridge per daemon, not the default docker0: every daemon on a host takes docker0 and hands
 *   out addresses from 172.17.0.0/16 on its own, so two daemons (two test files in parallel, or
 *   an engineer's daemon) both gave their first container 172.17.0.2 on the same bridge, and a
 *   port one daemon published answered with the other daemon's container (tried: it did). Each
 *   daemon here gets `--bridge tether-dkN` with 172.31.N.0/24, a bridge the harness creates and
 *   deletes. The interface's name is the lock between parallel files (`ip link add` fails when it
 *   exists); its alias names the owners' pids and the daemon's dir, so that a bridge and dir left
 *   by a test process killed outright are taken back by the next daemon.
 * - `--iptables=false`, no ip forwarding or masquerade: a starting dockerd flushes the DOCKER
 *   chains every other daemon relies on, and the tests need none of it. Ports published on
 *   127.0.0.1 (`-p 127.0.0.1::8080`) go through docker-proxy, the userland proxy, which needs no
 *   rule; the containers reach nothing beyond their bridge. Tests connect to 127.0.0.1 only,
 *   never to a container's address.
 * - No TLS for the registry (distribution 2.8, filesystem storage in a temp dir, no environment so
 *   no REGISTRY_* variable overrides its file): dockerd treats 127.0.0.0/8 as an insecure
 *   registry by default, so it pushes to and pulls from `127.0.0.1:PORT` over plain HTTP.
 * - Images FROM scratch with the static busybox (httpd, wget) and one index.html: about 2 MB,
 *   built through the Engine API (dockerode, a tar-stream context) and pushed in about half a
 *   second, with a HEALTHCHECK every second so that `healthy` comes in about a second and
 *   `unhealthy` in about three, not minutes.
 * - Everything stops by pid (SIGTERM, then SIGKILL after a deadline): the containers first, then
 *   dockerd, then its containerd should it outlive it, then every mount left under the temp dir
 *   (overlay layers, network namespaces, the data root's own bind mount) deepest first, then the
 *   dir and the bridge. A test file that forgets to stop is stopped when it ends (`stopAllDocker`). The daemons run under
 *   `setpriv --pdeathsig SIGTERM` (same pid): a test process killed outright still takes its
 *   dockerd and registry down with it, and dockerd then unmounts its own layers.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, readSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { createServer } from 'node:net';
import { Readable } from 'node:stream';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import * as tar from 'tar-stream';
import { systemProgram } from './system-program';
import { waitFor } from './wait';

const PURPOSE = 'the docker runtime tests';

export interface DockerDaemon {
  /** For DOCKER_HOST or the runtime's configuration: `unix:///tmp/tether-docker-…/docker.sock`. */
  host: string;
  socketPath: string;
  /** dockerd's pid. */
  pid: number;
  /** A client of this daemon. */
  docker: Docker;
  /** The bridge its containers are on, and that bridge's subnet. */
  bridge: string;
  subnet: string;
  /** Removes every container of the daemon, stops it (and its containerd) by pid, unmounts and removes its dirs and its bridge. */
  stop(): Promise<void>;
}

export interface Registry {
  /** `127.0.0.1:PORT`, the prefix of the images' references. */
  url: string;
  pid: number;
  stop(): Promise<void>;
}

export interface ServiceImageOptions {
  /** The repository's last part: the image is `<registry>/tether-test/<name>:<tag>`. */
  name: string;
  tag: string;
  /** What GET / answers (index.html), so that tests tell revisions apart; `<name>:<tag>` by default. */
  body?: string;
  /** The port httpd listens on in the container; 8080 by default. */
  port?: number;
  /** false: an image whose health check always fails (it asks for a page that is not there). */
  healthy?: boolean;
}

/** Whatever is still running: stopped whole by `stopAllDocker()`. */
const stoppers = new Set<() => Promise<void>>();

/**
 * Stops every daemon and registry started here and not stopped yet. test/helpers/docker.ts runs it
 * when a test file ends (vitest's afterAll: this file cannot import vitest, which refuses to load
 * in the benchmark's CommonJS bundle).
 */
export async function stopAllDocker(): Promise<void> {
  await Promise.allSettled([...stoppers].map((stop) => stop()));
}

/** Where each program the harness runs may be, and the Debian package that brings it. */
const PROGRAMS = {
  dockerd: { paths: ['/usr/sbin/dockerd', '/usr/bin/dockerd'], debianPackage: 'docker.io' },
  dockerProxy: { paths: ['/usr/sbin/docker-proxy', '/usr/bin/docker-proxy', '/usr/libexec/docker/docker-proxy'], debianPackage: 'docker.io' },
  registry: { paths: ['/usr/bin/docker-registry'], debianPackage: 'docker-registry' },
  busybox: { paths: ['/bin/busybox', '/usr/bin/busybox'], debianPackage: 'busybox-static' },
  ip: { paths: ['/usr/sbin/ip', '/sbin/ip', '/usr/bin/ip', '/bin/ip'], debianPackage: 'iproute2' },
  setpriv: { paths: ['/usr/bin/setpriv', '/bin/setpriv'], debianPackage: 'util-linux' },
  umount: { paths: ['/usr/bin/umount', '/bin/umount'], debianPackage: 'mount' },
} as const;
type Programs = Record<keyof typeof PROGRAMS, string>;

/** How long a test file's set-up may take on a fresh machine, where apt-get installs the packages first. */
export const DOCKER_SETUP_TIMEOUT_MS = 600_000;

let programs: Programs | undefined;
const GAVE_UP = Symbol('gave up');
let finding: Promise<Programs> | undefined;

/**
 * Finds every program the harness runs, installing the missing packages with apt-get when root
 * (`systemProgram`; parallel test files wait their turn for the dpkg lock, retrying until
 * DOCKER_SETUP_TIMEOUT_MS). Not root: dockerd cannot run, and one line names every missing
 * package. Also checks that /bin/busybox is the static one, the only kind that runs FROM scratch.
 */
export function dockerPrograms(): Promise<Programs> {
  return (finding ??= (async () => {
    const names = Object.keys(PROGRAMS) as Array<keyof typeof PROGRAMS>;
    const found: Partial<Programs> = {};
    const missing = new Set<string>();
    const root = process.getuid?.() === 0;
    for (const name of names) {
      const { paths, debianPackage } = PROGRAMS[name];
      const attempt = () => {
        try {
          return systemProgram([...paths], debianPackage, PURPOSE);
        } catch {
          return undefined;
        }
      };
      // Root: apt-get fails at once while another test file holds the dpkg lock, so a few tries.
      let tries = 0;
      const retried = () => attempt() ?? (++tries >= 10 ? GAVE_UP : undefined);
      const path = root ? await waitFor(retried, `apt-get to install ${debianPackage}`, DOCKER_SETUP_TIMEOUT_MS, 2000).catch(() => GAVE_UP) : attempt();
      if (typeof path === 'string') found[name] = path;
      else missing.add(debianPackage);
    }
    if (missing.size > 0) {
      const list = [...missing].join(' ');
      throw new Error(`${PURPOSE} need the Debian packages ${[...missing].join(', ')}: install them (apt-get install ${list}) and run the tests again`);
    }
    if (!isStaticElf(found.busybox!)) {
      throw new Error(
        `${PURPOSE} need the Debian package busybox-static (${found.busybox} is dynamically linked): install it (apt-get install busybox-static) and run the tests again`,
      );
    }
    if (!root) throw new Error(`${PURPOSE} run a dockerd of their own, which needs root: run them as root`);
    return (programs = found as Programs);
  })());
}

/** The programs, once `dockerPrograms()` has found them (every entry point awaits it first). */
const program = (name: keyof Programs): string => {
  if (!programs) throw new Error('dockerPrograms() has not found the programs yet');
  return programs[name];
};
const ipProgram = () => program('ip');

function ip(args: string[]): { ok: boolean; out: string } {
  const r = spawnSync(ipProgram(), args, { encoding: 'utf8' });
  return { ok: r.status === 0, out: `${r.stdout}${r.stderr}`.trim() };
}

/** Alive and not a zombie (a daemon's orphaned containerd may wait to be reaped by init). */
export function isAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

/** SIGTERM, then SIGKILL once `graceMs` has passed; resolves once the pid is gone. */
async function stopPid(pid: number, graceMs: number): Promise<void> {
  const signal = (s: NodeJS.Signals) => {
    try {
      process.kill(pid, s);
    } catch {
      // gone already
    }
  };
  if (!isAlive(pid)) return;
  signal('SIGTERM');
  try {
    await waitFor(() => !isAlive(pid), `pid ${pid} to exit on SIGTERM`, graceMs, 50);
  } catch {
    signal('SIGKILL');
    await waitFor(() => !isAlive(pid), `pid ${pid} to exit on SIGKILL`, 10_000, 50);
  }
}

/** Output lines of a child, the last `keep` of them, for error messages. */
function tail(child: ChildProcess, keep = 30): () => string {
  const lines: string[] = [];
  const add = (chunk: Buffer) => {
    lines.push(...chunk.toString().split('\n').filter(Boolean));
    lines.splice(0, Math.max(0, lines.length - keep));
  };
  child.stdout?.on('data', add);
  child.stderr?.on('data', add);
  return () => lines.join('\n');
}

/** A child with its last output lines kept, which dies with the test process. */
function spawnTracked(bin: string, args: string[], env: NodeJS.ProcessEnv): { child: ChildProcess; log: () => string; exited: () => boolean } {
  // setpriv execs the program (same pid) with SIGTERM as its parent-death signal: should the test
  // process be killed outright, the daemon still shuts down (its containers and mounts with it).
  const child = spawn(program('setpriv'), ['--pdeathsig', 'SIGTERM', '--', bin, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env });
  let exited = false;
  child.once('exit', () => (exited = true));
  child.once('error', () => (exited = true));
  return { child, log: tail(child), exited: () => exited };
}

/** Unmounts everything mounted under `dir` (deepest first), so that it can be removed. */
function unmountUnder(dir: string): void {
  const umount = program('umount');
  const mounted = () =>
    readFileSync('/proc/self/mountinfo', 'utf8')
      .split('\n')
      .map((line) => line.split(' ')[4]?.replace(/\\040/g, ' '))
      .filter((point): point is string => !!point && (point === dir || point.startsWith(`${dir}/`)))
      .sort((a, b) => b.length - a.length);
  for (const point of mounted()) {
    if (spawnSync(umount, [point], { stdio: 'ignore' }).status !== 0) spawnSync(umount, ['-l', point], { stdio: 'ignore' });
  }
  const left = mounted();
  if (left.length > 0) throw new Error(`mounts left under ${dir}: ${left.join(', ')}`);
}

function pingOk(socketPath: string): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request({ socketPath, path: '/_ping', timeout: 2000 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('error', () => resolve(false));
    req.on('timeout', () => req.destroy());
    req.end();
  });
}

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

/** A port free right now on 127.0.0.1 (the registry must be told its port). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

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

/** A statically linked ELF has no interpreter (PT_INTERP): it runs in an image with no libc. */
function isStaticElf(path: string): boolean {
  const fd = openSync(path, 'r');
  try {
    const head = Buffer.alloc(64);
    readSync(fd, head, 0, 64, 0);
    if (head.readUInt32BE(0) !== 0x7f454c46 || head[4] !== 2) return false; // ELF, 64-bit
    const phoff = Number(head.readBigUInt64LE(0x20));
    const phentsize = head.readUInt16LE(0x36);
    const phnum = head.readUInt16LE(0x38);
    const table = Buffer.alloc(phentsize * phnum);
    readSync(fd, table, 0, table.length, phoff);
    for (let i = 0; i < phnum; i++) if (table.readUInt32LE(i * phentsize) === 3) return false;
    return true;
  } finally {
    closeSync(fd);
  }
}

/** One JSON line of a build or push stream (the fields read here; the daemon sends more). */
interface ProgressEvent {
  error?: string;
  errorDetail?: { message?: string };
  [field: string]: unknown;
}

/** The JSON lines of a build or push stream; fails on the first error the daemon reports in it. */
async function follow(docker: Docker, stream: NodeJS.ReadableStream, what: string): Promise<ProgressEvent[]> {
  const events = await new Promise<ProgressEvent[]>((resolve, reject) =>
    docker.modem.followProgress(stream, (err: Error | null, out: ProgressEvent[]) => (err ? reject(err) : resolve(out))),
  );
  const failed = events.find((e) => e.error || e.errorDetail);
  if (failed) throw new Error(`${what} failed: ${failed.error ?? failed.errorDetail?.message}`);
  return events;
}

/** The Dockerfile of a service image (see ServiceImageOptions). */
export function serviceDockerfile(port: number, healthy: boolean): string {
  const probe = `http://127.0.0.1:${port}/${healthy ? '' : 'no-such-page'}`;
  return [
    'FROM scratch',
    'COPY busybox /bin/busybox',
    'COPY www /www',
    `EXPOSE ${port}`,
    `HEALTHCHECK --interval=1s --timeout=3s --retries=3 CMD ["/bin/busybox","wget","-q","-O-","${probe}"]`,
    `CMD ["/bin/busybox","httpd","-f","-p","${port}","-h","/www"]`,
    '',
  ].join('\n');
}

/**
 * Builds `<registry>/tether-test/<name>:<tag>` on `daemon` through the Engine API (FROM scratch:
 * the static busybox, /www/index.html with `body`, httpd on `port`, a HEALTHCHECK that fails
 * when `healthy` is false), pushes it to `registry`, and returns that reference.
 */
export async function buildServiceImage(daemon: DockerDaemon, registry: Registry, options: ServiceImageOptions): Promise<string> {
  const { name, tag, port = 8080, healthy = true } = options;
  const body = options.body ?? `${name}:${tag}\n`;
  const reference = `${registry.url}/tether-test/${name}:${tag}`;
  const mtime = new Date(0);
  const pack = tar.pack();
  pack.entry({ name: 'Dockerfile', mode: 0o644, mtime }, serviceDockerfile(port, healthy));
  pack.entry({ name: 'busybox', mode: 0o755, mtime }, readFileSync((await dockerPrograms()).busybox));
  pack.entry({ name: 'www', type: 'directory', mode: 0o755, mtime });
  pack.entry({ name: 'www/index.html', mode: 0o644, mtime }, body);
  pack.finalize();
  const { docker } = daemon;
  await follow(docker, await docker.buildImage(Readable.from(pack), { t: reference, rm: true, forcerm: true }), `building ${reference}`);
  const push = await docker.getImage(reference).push({ authconfig: { serveraddress: registry.url } });
  await follow(docker, push, `pushing ${reference}`);
  return reference;
}
