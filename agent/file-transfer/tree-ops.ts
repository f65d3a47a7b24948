/**
 * @module The file-transfer ops that change the tree: `remove`, `mkdir` and `rename`
 * (docs/session-streams.md, changing files). Each names an entry by its parent, resolved and
 * confined like every other path, and its last name, which is never followed: removing or
 * renaming a symbolic link acts on the link, whatever it points to. The files root itself is
 * never removed, renamed or renamed over.
 */
import { constants } from 'node:fs';
import { lstat, mkdir, open, realpath, rename, rm, rmdir, unlink, type FileHandle } from 'node:fs/promises';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import { assertOpenedInside, isInside, resolveConfined } from '../../shared/files/confine';
import { FILES_ROOT, OpError } from '../../shared/protocol/op-error';
import type { MkdirParams, RemoveParams, RenameParams } from '../../shared/protocol/session-stream';
import { toEntry, type Entry } from './entries';

interface Named {
  /** The entry's path: its canonical parent directory joined with its own name (not resolved). */
  path: string;
  name: string;
  shown: string;
  realRoot: string;
}

/**
 * Where `requested` names an entry: its parent canonical and inside the root, its own name kept
 * as it is. The root itself (`/`, `.`, `a/..`) is refused: nothing names it as an entry.
 */
async function named(root: string, requested: string): Promise<Named> {
  if (requested.includes('\0')) throw new OpError('bad_params', 'path contains a NUL byte');
  const realRoot = await realpath(root);
  const lexical = resolve(realRoot, `.${sep}${requested}`);
  if (!isInside(realRoot, lexical)) throw new OpError('path_outside_root', `${requested} is outside ${FILES_ROOT}`, { namesRoot: true });
  if (lexical === realRoot) throw new OpError('bad_params', `${requested} names ${FILES_ROOT} itself, which this op does not touch`, { namesRoot: true });
  const parent = await resolveConfined(root, `/${relative(realRoot, dirname(lexical))}`);
  if (parent.missing.length > 0) throw new OpError('not_found', `${dirname(requested)} does not exist`);
  if (!(await lstat(parent.path)).isDirectory()) throw new OpError('not_a_directory', `${dirname(requested)} is not a directory`);
  const name = basename(lexical);
  return { path: join(parent.path, name), name, shown: requested, realRoot };
}

/**
 * Opens an entry's parent directory (never through a link at its last step) and checks that
 * what was opened is inside the root; the entry is then reached through the open descriptor
 * (`/proc/self/fd/N/NAME` on Linux), so a directory swapped for a link after the check cannot
 * lead the change out of the root. Close the handle when done.
 */
async function pinParent(target: Named): Promise<{ handle: FileHandle; path: string }> {
  const handle = await open(dirname(target.path), constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  try {
    await assertOpenedInside(handle, target.realRoot, target.shown);
    const pinned = `/proc/self/fd/${handle.fd}`;
    const viaFd = await lstat(pinned).then(
      () => true,
      () => false, // no /proc: the canonical path checked above is what we have
    );
    return { handle, path: join(viaFd ? pinned : dirname(target.path), target.name) };
  } catch (err) {
    await handle.close();
    throw err;
  }
}

/** Runs `act` on the entries' paths through their pinned parents. */
async function inParents<T>(targets: Named[], act: (...paths: string[]) => Promise<T>): Promise<T> {
  const pinned: Array<{ handle: FileHandle; path: string }> = [];
  try {
    for (const t of targets) pinned.push(await pinParent(t));
    return await act(...pinned.map((p) => p.path));
  } finally {
    for (const p of pinned) await p.handle.close();
  }
}

/** lstat, with "no such entry" as undefined. */
async function entryStats(path: string) {
  try {
    return await lstat(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** Removes a file, a link or (with `recursive`, when it holds anything) a directory tree. */
export async function removeEntry(root: string, p: RemoveParams): Promise<Record<string, never>> {
  const target = await named(root, p.path);
  const stats = await entryStats(target.path);
  if (!stats) throw new OpError('not_found', `${target.shown} does not exist`);
  if (!stats.isDirectory()) {
    await inParents([target], (path) => unlink(path));
    return {};
  }
  if (p.recursive) {
    // fs.rm looks at each entry with lstat: links inside the tree are removed, never followed.
    await inParents([target], (path) => rm(path, { recursive: true }));
    return {};
  }
  try {
    await inParents([target], (path) => rmdir(path));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOTEMPTY') {
      throw new OpError('exists', `${target.shown} is a directory that is not empty; remove it with recursive: true`);
    }
    throw err;
  }
  return {};
}

/** Makes one directory in an existing one; `exists` when anything has that name. */
export async function makeDirectory(root: string, p: MkdirParams): Promise<Entry> {
  const target = await named(root, p.path);
  try {
    await inParents([target], (path) => mkdir(path, { mode: 0o755 }));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') throw new OpError('exists', `${target.shown} exists already`);
    throw err;
  }
  return toEntry(target.name, await lstat(target.path))!;
}

/**
 * Moves an entry to a new name inside the root. A target that exists is refused (`exists`),
 * never replaced; a directory cannot move into itself.
 */
export async function renameEntry(root: string, p: RenameParams): Promise<Entry> {
  const from = await named(root, p.from);
  const to = await named(root, p.to);
  const stats = await entryStats(from.path);
  if (!stats) throw new OpError('not_found', `${from.shown} does not exist`);
  const entry = toEntry(from.name, stats);
  if (!entry) throw new OpError('bad_params', `${from.shown} is not a file, directory or link`);
  if (from.path === to.path) return entry;
  if (await entryStats(to.path)) throw new OpError('exists', `${to.shown} exists already`);
  if (stats.isDirectory() && isInside(from.path, to.path)) throw new OpError('bad_params', `${from.shown} cannot move into itself`);
  // Node has no renameat2(RENAME_NOREPLACE): the check above leaves a moment in which a new
  // entry of that name could appear and be replaced; nothing outside the root is ever reached.
  await inParents([from, to], (src, dest) => rename(src!, dest!));
  return { ...entry, name: to.name };
}
