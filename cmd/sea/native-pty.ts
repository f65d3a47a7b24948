/**
 * @module node-pty's native module inside the one-file agent (`dist/tether-agent-linux-x64`,
 * docs/agent-package.md): the executable carries `pty.node` as a SEA asset; it is written once to
 * a private, content-addressed cache file, its hash checked, and loaded with `process.dlopen`.
 */
import { createHash, randomBytes } from 'node:crypto';
import { closeSync, fstatSync, lstatSync, mkdirSync, openSync, readFileSync, readdirSync, renameSync, rmSync, writeSync } from 'node:fs';
import { constants, tmpdir } from 'node:os';
import { join } from 'node:path';

/** The asset's key in the SEA configuration (scripts/package.mjs). */
export const PTY_ASSET = 'pty.node';

/** Where the cache may live, best first: each is used only if it is ours and private. */
export function cacheDirCandidates(env: NodeJS.ProcessEnv, uid: number): string[] {
  const dirs: string[] = [];
  if (env.XDG_RUNTIME_DIR) dirs.push(join(env.XDG_RUNTIME_DIR, 'tether-agent'));
  // systemd's StateDirectory= (the Debian package's unit): /var/lib/tether-agent.
  const state = env.STATE_DIRECTORY?.split(':')[0];
  if (state) dirs.push(join(state, 'native'));
  dirs.push(join(env.TMPDIR || tmpdir(), `tether-agent-${uid}`));
  return dirs;
}

/**
 * A directory only this user can write: created 0700, or an existing one that is a real
 * directory (not a link), owned by this user and open to nobody else. Anything else is refused,
 * since a library another user could have written would run as the agent.
 */
function privateDir(dir: string, uid: number): boolean {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const st = lstatSync(dir);
    return st.isDirectory() && st.uid === uid && (st.mode & 0o077) === 0;
  } catch {
    return false;
  }
}

const sha256 = (data: Uint8Array): string => createHash('sha256').update(data).digest('hex');

/** Reads `file` if it is a regular file of ours whose content has the hash `want`. */
function verified(file: string, want: string, uid: number): boolean {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch {
    return false;
  }
  try {
    const st = fstatSync(fd);
    return st.isFile() && st.uid === uid && (st.mode & 0o022) === 0 && sha256(readFileSync(fd)) === want;
  } finally {
    closeSync(fd);
  }
}

/** Writes the library beside its final name and renames it into place (never a half file). */
function install(dir: string, name: string, data: Uint8Array): void {
  const temp = join(dir, `.${name}.${randomBytes(6).toString('hex')}`);
  const fd = openSync(temp, 'wx', 0o500);
  try {
    writeSync(fd, data);
  } finally {
    closeSync(fd);
  }
  renameSync(temp, join(dir, name));
  // Libraries of earlier versions of the agent: not needed any more.
  for (const old of readdirSync(dir)) if (old !== name && /^pty-[0-9a-f]{64}\.node$/.test(old)) rmSync(join(dir, old), { force: true });
}

/** The exports of `pty.node` carried in the executable; throws saying where it tried. */
export function loadPtyNative(asset: Uint8Array, env: NodeJS.ProcessEnv = process.env): unknown {
  const uid = process.getuid?.() ?? 0;
  const hash = sha256(asset);
  const name = `pty-${hash}.node`;
  const tried: string[] = [];
  for (const dir of cacheDirCandidates(env, uid)) {
    if (!privateDir(dir, uid)) {
      tried.push(`${dir} (not a private directory of uid ${uid})`);
      continue;
    }
    const file = join(dir, name);
    try {
      if (!verified(file, hash, uid)) {
        rmSync(file, { force: true });
        install(dir, name, asset);
        if (!verified(file, hash, uid)) throw new Error('its content changed after writing');
      }
      const mod = { exports: {} as unknown };
      process.dlopen(mod, file, constants.dlopen.RTLD_NOW);
      return mod.exports;
    } catch (err) {
      tried.push(`${dir} (${(err as Error).message})`);
    }
  }
  throw new Error(`cannot load the PTY library: ${tried.join('; ')}`);
}
