/**
 * @module `list` and `stat` of the file-transfer protocol: one entry per file, directory or
 * symbolic link, each with its name, type, size, mode and mtime (docs/session-streams.md, frames).
 */
import type { Stats } from 'node:fs';
import { lstat, opendir } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { resolveConfined } from '../../shared/files/confine';
import { OpError } from '../../shared/protocol/op-error';

export interface Entry {
  name: string;
  type: 'file' | 'dir' | 'symlink';
  size: number;
  mode: number;
  mtime: string;
}

/** The entry for `stats`, or undefined for sockets, fifos and devices (never transferred). */
export function toEntry(name: string, stats: Stats): Entry | undefined {
  const type = stats.isFile() ? 'file' : stats.isDirectory() ? 'dir' : stats.isSymbolicLink() ? 'symlink' : undefined;
  if (!type) return undefined;
  return { name, type, size: type === 'file' ? stats.size : 0, mode: stats.mode & 0o7777, mtime: stats.mtime.toISOString() };
}

/** Resolves a request path that must exist inside the root. */
export async function existing(root: string, path: string): Promise<string> {
  const { path: real, missing } = await resolveConfined(root, path);
  if (missing.length > 0) throw new OpError('not_found', `no such file or directory: ${path}`);
  return real;
}

export async function statEntry(root: string, path: string): Promise<Entry> {
  const real = await existing(root, path);
  const entry = toEntry(basename(real), await lstat(real));
  if (!entry) throw new OpError('not_found', `${path} is not a file or directory`);
  return entry;
}

/** The entries of a directory, sorted by name; at most `limit` of them. */
export async function listEntries(root: string, path: string, limit: number) {
  const real = await existing(root, path);
  if (!(await lstat(real)).isDirectory()) throw new OpError('not_a_directory', `${path} is not a directory`);
  const entries: Entry[] = [];
  let truncated = false;
  for await (const dirent of await opendir(real)) {
    if (entries.length >= limit) {
      truncated = true;
      break;
    }
    try {
      const entry = toEntry(dirent.name, await lstat(join(real, dirent.name)));
      if (entry) entries.push(entry);
    } catch {
      // removed while we listed
    }
  }
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { entries, truncated };
}
