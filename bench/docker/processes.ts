/** @module Finding and running the programs of real Docker (bench/docker.ts): Debian's packages, processes tracked and stopped by pid, mounts, the bridge tool, and the shapes the rest returns. */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync, readSync } from 'node:fs';
import { request } from 'node:http';
import Docker from 'dockerode';
import { systemProgram } from '../system-program';
import { waitFor } from '../wait';

export const PURPOSE = 'the docker runtime tests';

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
export const stoppers = new Set<() => Promise<void>>();

/**
 * Stops every daemon and registry started here and not stopped yet. test/helpers/docker.ts runs it
 * when a test file ends (vitest's afterAll: this file cannot import vitest, which refuses to load
 * in the benchmark's CommonJS bundle).
 */
export async function stopAllDocker(): Promise<void> {
  await Promise.allSettled([...stoppers].map((stop) => stop()));
}

/** Where each program the harness runs may be, and the Debian package that brings it. */
export const PROGRAMS = {
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
export const GAVE_UP = Symbol('gave up');
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
export const program = (name: keyof Programs): string => {
  if (!programs) throw new Error('dockerPrograms() has not found the programs yet');
  return programs[name];
};
export const ipProgram = () => program('ip');

export function ip(args: string[]): { ok: boolean; out: string } {
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
export async function stopPid(pid: number, graceMs: number): Promise<void> {
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
export function tail(child: ChildProcess, keep = 30): () => string {
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
export function spawnTracked(bin: string, args: string[], env: NodeJS.ProcessEnv): { child: ChildProcess; log: () => string; exited: () => boolean } {
  // setpriv execs the program (same pid) with SIGTERM as its parent-death signal: should the test
  // process be killed outright, the daemon still shuts down (its containers and mounts with it).
  const child = spawn(program('setpriv'), ['--pdeathsig', 'SIGTERM', '--', bin, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env });
  let exited = false;
  child.once('exit', () => (exited = true));
  child.once('error', () => (exited = true));
  return { child, log: tail(child), exited: () => exited };
}

/** Unmounts everything mounted under `dir` (deepest first), so that it can be removed. */
export function unmountUnder(dir: string): void {
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

export function pingOk(socketPath: string): Promise<boolean> {
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
