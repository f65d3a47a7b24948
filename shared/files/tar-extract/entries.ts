/**
 * @module What each entry of an archive becomes, checked before anything is written for it:
 * directories are made at once (only real directories inside the root are gone through), files
 * are streamed to temporary files beside their destination, and symbolic links are recorded, to
 * be judged with the whole archive (links.ts). A name holds one kind of entry (a directory, a
 * file or a link, never two), and no entry replaces a directory, device, FIFO or socket.
 */
import { constants, createWriteStream } from 'node:fs';
import { lstat, open, realpath, statfs, unlink } from 'node:fs/promises';
import { isAbsolute, join, resolve } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type * as tar from 'tar-stream';
import { assertOpenedInside, isInside } from '../confine';
import { MAX_ENTRY_NAME } from '../tar-names';
import { FILES_ROOT, OpError } from '../../protocol/op-error';
import type { Staging } from './staging';

/**
 * Bytes a file being written may hold before its source waits. The write stream writes whatever
 * waits in one writev once the write before it is done: with 256 KiB, a download wrote a few
 * 64 KiB socket reads per trip to the thread pool and ran at 0.8 of the speed it has with 4 MiB
 * (BENCHMARKS.md, issue 14); more measured the same.
 */
const FILE_WRITE_HIGH_WATER = 4 * 1024 * 1024;

/** A symbolic link to make once the whole archive is judged. */
export interface PlannedLink {
  kind: 'link';
  /** Canonical directory of the link: its target is resolved from here. */
  dir: string;
  final: string;
  target: string;
  /** The entry's name, for messages. */
  name: string;
}

/** What the archive puts at a path, besides the directories it makes at once. */
export type Planned = { kind: 'file'; name: string } | PlannedLink;

const KIND_SHOWN = { file: 'a file', link: 'a symbolic link' } as const;

export interface EntryPlanOptions {
  /** File content written so far, for progress. */
  onBytes?: ((bytes: number) => void) | undefined;
  /** The extraction's failure, if it has failed (a file opened after an abort removes itself). */
  failure(): unknown;
}

/**
 * The entries of one extraction into `targetDir` (canonical, inside `realRoot`, existing), as they
 * arrive; `planned` holds the files and links by canonical path (a later entry of the same name
 * and kind replaces an earlier one).
 */
export function createEntryPlan(realRoot: string, targetDir: string, staging: Staging, options: EntryPlanOptions) {
  const planned = new Map<string, Planned>();

  /** Makes the directories of `segments` below the target, refusing anything but real dirs inside the root. */
  async function ensureDir(segments: string[]): Promise<string> {
    let current = targetDir;
    for (const segment of segments) {
      const next = join(current, segment);
      // Not on disk yet, so lstat would not see it: mkdir here would make the rename fail later.
      const earlier = planned.get(next);
      if (earlier) throw new OpError('exists', `${earlier.name} is ${KIND_SHOWN[earlier.kind]} in this archive, not a directory`);
      let stats;
      try {
        stats = await lstat(next);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
        await staging.makeDir(next);
        current = next;
        continue;
      }
      if (stats.isSymbolicLink()) {
        const real = await realpath(next).catch((err: NodeJS.ErrnoException) => {
          if (err.code !== 'ENOENT' && err.code !== 'ENOTDIR' && err.code !== 'ELOOP') throw err;
          throw new OpError('not_a_directory', `${segment} is a symbolic link that leads nowhere`);
        });
        if (!isInside(realRoot, real)) throw new OpError('path_outside_root', `${segment} is a link leading outside ${FILES_ROOT}`, { namesRoot: true });
        if (!(await lstat(real)).isDirectory()) throw new OpError('not_a_directory', `${segment} is not a directory`);
        current = real;
      } else if (stats.isDirectory()) {
        current = next;
      } else {
        throw new OpError('exists', `${segment} exists and is not a directory`);
      }
    }
    return current;
  }

  /** Refuses to put a file or link where a directory, device, FIFO or socket is. */
  async function assertReplaceable(final: string, shown: string): Promise<void> {
    const existing = await lstat(final).catch(() => undefined);
    if (existing?.isDirectory()) throw new OpError('exists', `${shown} exists and is a directory`);
    // A rename would replace a device, FIFO or socket (think /dev/null) with a regular file.
    if (existing && !existing.isFile() && !existing.isSymbolicLink()) {
      throw new OpError('exists', `${shown} exists and is not a regular file`);
    }
  }

  /** One name, one kind: a file and a link of the same name cannot both land, so neither does. */
  function claim(final: string, entry: Planned): void {
    const earlier = planned.get(final);
    if (earlier && earlier.kind !== entry.kind) {
      throw new OpError('exists', `${entry.name} is in the archive both as ${KIND_SHOWN[earlier.kind]} and as ${KIND_SHOWN[entry.kind]}`);
    }
    planned.set(final, entry);
  }

  /** Writes a file's content to a temporary file beside its destination, fsynced. */
  async function stageFile(segments: string[], header: tar.Header, stream: NodeJS.ReadableStream): Promise<void> {
    const dir = await ensureDir(segments.slice(0, -1));
    const base = segments.at(-1)!;
    const final = join(dir, base);
    await assertReplaceable(final, segments.join('/'));
    claim(final, { kind: 'file', name: segments.join('/') });
    // A header may claim any size: refuse at once what cannot fit rather than fill the disk.
    const space = await statfs(dir);
    if (header.size > space.bavail * space.bsize) {
      throw new OpError('too_large', `${segments.join('/')} is ${header.size} bytes; only ${space.bavail * space.bsize} are free there`);
    }
    const temp = staging.tempName(dir, base);
    const handle = await open(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
    const failure = options.failure();
    if (failure) {
      // Aborted while the file was being created, perhaps after the cleanup ran: remove it here.
      await handle.close();
      await unlink(temp).catch(() => {});
      throw failure;
    }
    staging.addFile({ temp, final, mode: header.mode & 0o777, mtime: header.mtime });
    try {
      // A directory swapped for a symlink after ensureDir would show here.
      await assertOpenedInside(handle, realRoot, segments.join('/'));
      const onBytes = options.onBytes;
      const counter = new Transform({
        transform(chunk: Buffer, _enc, done) {
          onBytes?.(chunk.length);
          done(null, chunk);
        },
      });
      await pipeline(stream, counter, createWriteStream('', { fd: handle.fd, autoClose: false, highWaterMark: FILE_WRITE_HIGH_WATER }));
      await handle.sync();
    } finally {
      await handle.close();
    }
  }

  /**
   * Records a symbolic link, refusing at once what can never be right. Where it leads is judged
   * at commit, when the archive's other entries (perhaps links it goes through) are known.
   */
  async function planLink(segments: string[], header: tar.Header): Promise<void> {
    const dir = await ensureDir(segments.slice(0, -1));
    const final = join(dir, segments.at(-1)!);
    const target = header.linkname ?? '';
    if (!target || target.includes('\0') || isAbsolute(target) || !isInside(realRoot, resolve(dir, target))) {
      throw new OpError('path_outside_root', `symbolic link ${header.name} -> ${target} leads outside ${FILES_ROOT}`, { namesRoot: true });
    }
    if (Buffer.byteLength(target) >= MAX_ENTRY_NAME) {
      throw new OpError('bad_params', `symbolic link ${header.name} has a target longer than ${MAX_ENTRY_NAME - 1} bytes`);
    }
    await assertReplaceable(final, segments.join('/'));
    claim(final, { kind: 'link', dir, final, target, name: header.name });
  }

  return {
    /** Makes a directory entry (and its parents). */
    ensureDir,
    stageFile,
    planLink,
    planned: planned as ReadonlyMap<string, Planned>,
  };
}
