/**
 * @module Tar entry names made safe: tar-stream does not sanitise them, so both the agent
 * (uploads) and the client (downloads) split a name into plain relative segments and refuse
 * absolute names, `..`, NUL bytes and overlong names. The targets of symbolic links are judged
 * here too (`linkProblem`), against a view of the tree the extractor supplies.
 */
import { dirname, isAbsolute, join, relative } from 'node:path';
import { FILES_ROOT } from '../protocol/op-error';
import type { OpErrorCode } from '../protocol/session-stream';

export const MAX_ENTRY_NAME = 4096;
export const MAX_NAME_COMPONENT = 255;

export interface NameProblem {
  code: Extract<OpErrorCode, 'path_outside_root' | 'bad_params'>;
  message: string;
}

export type NameCheck = { ok: true; segments: string[] } | { ok: false; problem: NameProblem };

export function checkEntryName(name: string): NameCheck {
  const bad = (code: NameProblem['code'], message: string): NameCheck => ({ ok: false, problem: { code, message } });
  const shown = JSON.stringify(name.length > 80 ? `${name.slice(0, 80)}…` : name);
  if (name.includes('\0')) return bad('path_outside_root', 'a tar entry name contains a NUL byte');
  if (name.length > MAX_ENTRY_NAME) return bad('bad_params', `a tar entry name is longer than ${MAX_ENTRY_NAME} characters`);
  if (name.startsWith('/') || name.startsWith('\\') || /^[A-Za-z]:[\\/]/.test(name)) {
    return bad('path_outside_root', `tar entry ${shown} has an absolute name`);
  }
  const segments = name.split(/[\\/]+/).filter((s) => s !== '' && s !== '.');
  if (segments.includes('..')) return bad('path_outside_root', `tar entry ${shown} climbs out with ..`);
  if (segments.some((s) => Buffer.byteLength(s) > MAX_NAME_COMPONENT)) {
    return bad('bad_params', `tar entry ${shown} has a name component over ${MAX_NAME_COMPONENT} bytes`);
  }
  return { ok: true, segments };
}

/** What a name is in a tree being judged, without following a link there. */
export type NodeKind = 'dir' | 'file' | 'link' | 'missing' | 'other';

/** A tree as it will be: what is on disk, overlaid with what an extraction is about to put there. */
export interface TreeView {
  /** What is at `path` (absolute, its parent canonical). */
  kindOf(path: string): Promise<NodeKind>;
  /** The target of the link at `path` (`kindOf` said `link`). */
  linkTarget(path: string): Promise<string>;
}

/** Links followed in all while judging one target before giving up, as the kernel's ELOOP limit. */
export const MAX_LINK_HOPS = 40;

const KIND_SHOWN: Record<NodeKind, string> = {
  dir: 'a directory',
  file: 'a file',
  link: 'a symbolic link',
  missing: 'missing',
  other: 'not a directory',
};

/**
 * Why a symbolic link in `dir` (canonical, inside `realRoot`) pointing at `target` could lead
 * outside the root, now or after any later upload, or undefined when it cannot. The link is
 * judged as the kernel would follow it through `tree` (the tree once every entry is in place):
 *
 * - the target is relative;
 * - before its last `..`, it passes only through real directories. A `..` after a link climbs
 *   from wherever that link leads (`p/q/..` with `q -> ..` is the root's parent), and a file or
 *   a missing name there could become such a link in a later upload. Real directories stay
 *   real directories: an upload never replaces one. So up to its last `..` the target resolves
 *   as it reads, and `..` may not climb above the root;
 * - after its last `..` come only names; every link met there obeys this same rule (at most
 *   MAX_LINK_HOPS links are followed in all), so it stays inside and so does whatever lies below it.
 *
 * Ordinary links pass: `current -> releases/v2`, `lib.so -> lib.so.1 -> lib.so.1.2`,
 * `node_modules/.bin/tsc -> ../typescript/bin/tsc`, `up -> ..` below the root.
 */
export async function linkProblem(realRoot: string, dir: string, target: string, tree: TreeView): Promise<LinkRefusal | undefined> {
  try {
    await followTarget(realRoot, dir, target, tree, { hops: 0 });
    return undefined;
  } catch (err) {
    if (err instanceof LinkProblem) return { reason: err.message, namesRoot: err.namesRoot };
    throw err;
  }
}

/** Why a link is refused; `namesRoot`: the reason says FILES_ROOT where the files root belongs (shared/protocol/op-error.ts). */
export interface LinkRefusal {
  reason: string;
  namesRoot: boolean;
}

/** The reason a link is refused, thrown from deep in the walk and caught by linkProblem. */
class LinkProblem extends Error {
  constructor(
    message: string,
    readonly namesRoot = false,
  ) {
    super(message);
  }
}

/**
 * Walks `target` from `dir` and returns where it leads (canonical), or undefined when it ends
 * below something that is not a directory yet (dangling: nothing to follow further).
 */
async function followTarget(realRoot: string, dir: string, target: string, tree: TreeView, followed: { hops: number }): Promise<string | undefined> {
  if (target === '') throw new LinkProblem('has an empty target');
  if (target.includes('\0')) throw new LinkProblem('has a NUL byte in its target');
  if (isAbsolute(target)) throw new LinkProblem('has an absolute target');
  const parts = target.split('/').filter((p) => p !== '' && p !== '.');
  const lastUp = parts.lastIndexOf('..');
  let current = dir;
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!;
    if (part === '..') {
      if (current === realRoot) throw new LinkProblem(`climbs above ${FILES_ROOT}`, true);
      current = dirname(current);
      continue;
    }
    const next = join(current, part);
    const kind = await tree.kindOf(next);
    const shown = relative(realRoot, next);
    if (i < lastUp) {
      if (kind !== 'dir') throw new LinkProblem(`climbs back out of ${shown}, which is ${KIND_SHOWN[kind]}`);
      current = next;
    } else if (kind === 'link') {
      // Counted over the whole walk: a depth limit alone would let links that branch cost k^40.
      if (++followed.hops > MAX_LINK_HOPS) throw new LinkProblem(`leads through more than ${MAX_LINK_HOPS} symbolic links`);
      const via = await followTarget(realRoot, current, await tree.linkTarget(next), tree, followed).catch((err: unknown) => {
        throw err instanceof LinkProblem ? new LinkProblem(`goes through ${shown}, which ${err.message}`, err.namesRoot) : err;
      });
      if (via === undefined) return undefined;
      current = via;
    } else if (kind === 'dir' || i === parts.length - 1) {
      current = next;
    } else {
      return undefined; // below a file or a missing name: whatever goes there later is judged then
    }
  }
  return current;
}
