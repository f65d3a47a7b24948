/**
 * @module Confinement of paths to a root directory: canonicalise (resolve `..` and symlinks)
 * and refuse anything that ends up outside. Opening goes through `openConfined`, which opens
 * with O_NOFOLLOW and checks the opened file's real path afterwards, so a symlink swapped in
 * between the check and the use (a TOCTOU race) cannot lead out.
 */
import { constants } from 'node:fs';
import { lstat, open, readlink, realpath, type FileHandle } from 'node:fs/promises';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import { FILES_ROOT, OpError } from '../protocol/op-error';

/** Messages that say where the files root is (the device names it there). */
const IN_ROOT = { namesRoot: true };

/** True when `path` is `root` itself or below it (both canonical). */
export function isInside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === '' || (!rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel));
}

/**
 * The canonical absolute path of `requested` (relative to `root`; a leading `/` means the root)
 * as far as it exists, plus the part that does not exist yet. Throws OpError when it
 * leads outside the root.
 */
export async function resolveConfined(root: string, requested: string): Promise<{ path: string; missing: string[] }> {
  if (requested.includes('\0')) throw new OpError('bad_params', 'path contains a NUL byte');
  const realRoot = await realpath(root);
  const lexical = resolve(realRoot, `.${sep}${requested}`);
  if (!isInside(realRoot, lexical)) throw new OpError('path_outside_root', `${requested} is outside ${FILES_ROOT}`, IN_ROOT);
  // Walk up to the deepest existing ancestor and canonicalise it (following symlinks).
  const missing: string[] = [];
  let existing = lexical;
  for (;;) {
    try {
      const real = await realpath(existing);
      if (!isInside(realRoot, real)) throw new OpError('path_outside_root', `${requested} leads outside ${FILES_ROOT}`, IN_ROOT);
      return { path: missing.length ? join(real, ...missing.slice().reverse()) : real, missing: missing.slice().reverse() };
    } catch (err) {
      if (err instanceof OpError) throw err;
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' && code !== 'ENOTDIR') throw err;
      if (existing === realRoot) throw new OpError('not_found', `${FILES_ROOT} does not exist`, IN_ROOT);
      missing.push(existing.slice(existing.lastIndexOf(sep) + 1));
      existing = resolve(existing, '..');
    }
  }
}

/** Verifies after the fact that an open descriptor's file is inside `root` (Linux /proc). */
export async function assertOpenedInside(handle: FileHandle, realRoot: string, shown: string): Promise<void> {
  let actual: string;
  try {
    actual = await readlink(`/proc/self/fd/${handle.fd}`);
  } catch {
    return; // no /proc: O_NOFOLLOW on a canonical path is what we have
  }
  if (!isInside(realRoot, actual)) throw new OpError('path_outside_root', `${shown} leads outside ${FILES_ROOT}`, IN_ROOT);
}

/** Opens an existing file inside the root for reading, refusing symlinks at the last step. */
export async function openConfined(realRoot: string, canonicalPath: string, shown: string): Promise<FileHandle> {
  const handle = await open(canonicalPath, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    await assertOpenedInside(handle, realRoot, shown);
  } catch (err) {
    await handle.close();
    throw err;
  }
  return handle;
}

/**
 * Opens an existing regular file inside the root for reading, like `openConfined`, and never
 * anything else: a FIFO, socket, device node or directory is refused with `bad_params`. The
 * open does not block (O_NONBLOCK): a blocking open of a FIFO waits for a writer while holding
 * one of libuv's four file threads, and a few of them stall every file operation of the process.
 * The opened descriptor's type is what counts (fstat), so a file swapped for a FIFO between the
 * check and the open is caught too.
 */
export async function openRegularConfined(realRoot: string, canonicalPath: string, shown: string): Promise<FileHandle> {
  const notRegular = () => new OpError('bad_params', `${shown} is not a regular file`);
  // Looked at before opening, because opening a device node can act on the device (a tape
  // rewinds, a serial line's modem signals rise); the fstat below is the check that holds.
  const before = await lstat(canonicalPath);
  if (before.isSymbolicLink()) throw new OpError('path_outside_root', 'refusing to follow a symbolic link');
  if (!before.isFile()) throw notRegular();
  let handle: FileHandle;
  try {
    handle = await open(canonicalPath, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENXIO') throw notRegular(); // a socket swapped in
    throw err;
  }
  try {
    await assertOpenedInside(handle, realRoot, shown);
    if (!(await handle.stat()).isFile()) throw notRegular();
  } catch (err) {
    await handle.close();
    throw err;
  }
  return handle;
}
