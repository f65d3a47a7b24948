/**
 * @module Where a `forward --stdio` master listens, and how exactly one master gets to listen
 * there: a Unix socket in a private directory (mode 0700, as ssh's ControlPath wants it), named
 * by a hash of the server, the token and the device, so one master serves one user's connections
 * to one device. A socket left by a dead master is replaced; of two masters starting at once,
 * one listens and the other sees it and leaves (bind, then a connect check, under a lock file).
 */
import { createHash } from 'node:crypto';
import { closeSync, lstatSync, mkdirSync, openSync, rmSync, statSync, chmodSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { configPath } from '../config';
import { CliError } from '../errors';

/** sun_path holds 108 bytes on Linux, 104 on macOS and the BSDs. */
const MAX_SOCKET_PATH = 103;
/** A lock file older than this was left by a master that died while starting. */
const STALE_LOCK_MS = 5000;

export interface MasterPaths {
  dir: string;
  socket: string;
  log: string;
  lock: string;
}

/** Makes `dir` (and its parents) and checks it is ours and private: a directory, not a link, 0700. */
function privateDir(dir: string): string {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const st = lstatSync(dir);
  const uid = process.getuid?.();
  if (!st.isDirectory() || (uid !== undefined && st.uid !== uid)) {
    throw new CliError(`${dir} is not a directory of this user's: tether forward --stdio keeps its sockets there`, 'local_file');
  }
  if ((st.mode & 0o777) !== 0o700) chmodSync(dir, 0o700);
  return dir;
}

/** The directories a master's socket may live in, best first. */
function candidateDirs(env: NodeJS.ProcessEnv): string[] {
  const dirs = [join(dirname(configPath(env)), 'run')];
  if (env.XDG_RUNTIME_DIR) dirs.unshift(join(env.XDG_RUNTIME_DIR, 'tether'));
  dirs.push(join(tmpdir(), `tether-${process.getuid?.() ?? 'user'}`));
  return dirs;
}

/** The socket, log and lock of the master for (server, token, device). */
export function masterPaths(env: NodeJS.ProcessEnv, server: string, token: string, device: string): MasterPaths {
  const name = createHash('sha256').update(`${server}\0${token}\0${device}`).digest('hex').slice(0, 20);
  const dir = candidateDirs(env).find((d) => Buffer.byteLength(join(d, `${name}.sock`)) <= MAX_SOCKET_PATH);
  if (!dir) throw new CliError('no directory with a path short enough for a Unix socket: set XDG_RUNTIME_DIR', 'local_file');
  privateDir(dir);
  return { dir, socket: join(dir, `${name}.sock`), log: join(dir, `${name}.log`), lock: join(dir, `${name}.lock`) };
}

/** Connects to a Unix socket; rejects with the system's error (ENOENT, ECONNREFUSED). */
export function connectUnix(path: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(path);
    socket.once('connect', () => {
      socket.removeListener('error', reject);
      resolve(socket);
    });
    socket.once('error', reject);
  });
}

/** Whether a master answers on `path`. */
async function alive(path: string): Promise<boolean> {
  try {
    (await connectUnix(path)).destroy();
    return true;
  } catch {
    return false;
  }
}

function listenOn(server: Server, path: string): Promise<NodeJS.ErrnoException | undefined> {
  return new Promise((resolve) => {
    const onError = (err: NodeJS.ErrnoException) => resolve(err);
    server.once('error', onError);
    server.listen(path, () => {
      server.removeListener('error', onError);
      resolve(undefined);
    });
  });
}

/** Takes the lock file; false while another process holds it (a stale one is removed). */
function tryLock(lock: string): boolean {
  try {
    closeSync(openSync(lock, 'wx', 0o600));
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    try {
      if (Date.now() - statSync(lock).mtimeMs > STALE_LOCK_MS) rmSync(lock, { force: true });
    } catch {
      // removed meanwhile by its holder
    }
    return false;
  }
}

/**
 * Listens on `paths.socket` as the one master, or resolves undefined when another master
 * answers there. `deadlineMs`: how long to wait for a lock another starter holds.
 */
export async function listenAsMaster(paths: MasterPaths, onConnection: (s: Socket) => void, deadlineMs = 10_000): Promise<Server | undefined> {
  const server = createServer({ allowHalfOpen: true }, onConnection);
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    const err = await listenOn(server, paths.socket);
    if (!err) return server;
    if (err.code !== 'EADDRINUSE') throw new CliError(`cannot listen on ${paths.socket}: ${err.message}`, 'local_file');
    if (await alive(paths.socket)) return undefined;
    // Nobody answers: a dead master's socket. Replace it under the lock, so that two starters
    // cannot each remove the other's fresh socket.
    if (tryLock(paths.lock)) {
      try {
        if (await alive(paths.socket)) return undefined;
        rmSync(paths.socket, { force: true });
        const again = await listenOn(server, paths.socket);
        if (!again) return server;
        if (again.code !== 'EADDRINUSE') throw new CliError(`cannot listen on ${paths.socket}: ${again.message}`, 'local_file');
      } finally {
        rmSync(paths.lock, { force: true });
      }
    }
    if (Date.now() > deadline) throw new CliError(`cannot take ${paths.socket}: another tether is starting there`, 'timeout');
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The socket file's identity, to remove it at exit only if it is still ours. */
export function inodeOf(path: string): number | undefined {
  try {
    return statSync(path).ino;
  } catch {
    return undefined;
  }
}
