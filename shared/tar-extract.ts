/**
 * @module Safe tar extraction, for the agent's `upload` and the client's download: one tar
 * stream extracted into a directory inside a root, fully streaming. Every entry is checked before anything is written (no absolute names, no `..`, no
 * links leading out, no hard links or device files, caps on size and count); files go to
 * temporary files beside their destination, are fsynced, and are renamed into place only once
 * the whole archive has arrived. A failure or a cut connection removes every temporary file and
 * every directory the upload created, so nothing partial is ever left behind.
 *
 * The whole archive is judged before the first rename: a name holds one kind of entry (a
 * directory, a file or a link, never two), and symbolic links are judged as they will resolve
 * once every entry is in place (`linkProblem`), since a link may lead through another one the
 * same archive makes later. A refused archive leaves the tree exactly as it was.
 */
import { randomBytes } from 'node:crypto';
import { constants, createWriteStream } from 'node:fs';
import { chmod, lstat, mkdir, open, readlink, realpath, rename, rmdir, statfs, symlink, unlink, utimes } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import * as tar from 'tar-stream';
import { assertOpenedInside, isInside } from './fs-confine';
import { checkEntryName, linkProblem, MAX_ENTRY_NAME, type NodeKind, type TreeView } from './tar-names';
import { TransferError } from './transfer-error';

/** Told about every temporary file and directory before it is created (see agent/upload-journal). */
export interface StagingJournal {
  file(path: string): void;
  dir(path: string): void;
  /** The extraction is committed or cleaned up. */
  end(): void;
}

export interface ExtractOptions {
  /** Sum of file sizes; 0 = unlimited. */
  maxBytes: number;
  maxEntries: number;
  /** Maps an entry's safe segments to where it goes (e.g. a new name for the top entry). */
  rename?: (segments: string[]) => string[];
  /** File content written so far, for progress. */
  onBytes?: (bytes: number) => void;
  /** What to call the limit in a `too_large` message. */
  limitHolder?: string;
  /** Records what is about to be created, so a process killed meanwhile can clean up later. */
  journal?: StagingJournal;
  /** Directories made for this extraction beforehand (the target's missing parents), outermost first. */
  createdDirs?: string[];
}

export interface ExtractResult {
  files: number;
  bytes: number;
}

/** How long an abort waits for the file being written to close before removing it anyway. */
const ABORT_GRACE_MS = 1000;

interface Staged {
  temp: string;
  final: string;
  mode: number;
  mtime: Date;
}

/** A symbolic link to make once the whole archive is judged. */
interface PlannedLink {
  kind: 'link';
  /** Canonical directory of the link: its target is resolved from here. */
  dir: string;
  final: string;
  target: string;
  /** The entry's name, for messages. */
  name: string;
}

/** What the archive puts at a path, besides the directories it makes at once. */
type Planned = { kind: 'file'; name: string } | PlannedLink;

const KIND_SHOWN = { file: 'a file', link: 'a symbolic link' } as const;

/** Temporary names beside the destination; upload-journal recognises exactly these. */
function tempNameFor(dir: string, base: string): string {
  return join(dir, `.${base.slice(0, 200)}.tether-${randomBytes(6).toString('hex')}.part`);
}

/** What is on disk at `path`, not following a link there. */
async function diskKind(path: string): Promise<NodeKind> {
  try {
    const stats = await lstat(path);
    if (stats.isSymbolicLink()) return 'link';
    if (stats.isDirectory()) return 'dir';
    return stats.isFile() ? 'file' : 'other';
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return 'missing';
    throw err;
  }
}

/** The entry's name as safe relative segments, or an TransferError naming the problem. */
export function safeSegments(name: string): string[] {
  const check = checkEntryName(name);
  if (!check.ok) throw new TransferError(check.problem.code, check.problem.message);
  return check.segments;
}

/**
 * Extracts a tar fed through `input()` into `targetDir` (canonical, inside `realRoot`, existing).
 * Call `commit()` after the last chunk and `abort()` on any failure.
 */
export function createExtraction(realRoot: string, targetDir: string, limits: ExtractOptions) {
  // Room for a few frames: a 16 KiB buffer (the default) would stall the socket every frame.
  const extract = tar.extract({ highWaterMark: 4 * 1024 * 1024 });
  const staged: Staged[] = [];
  /** By canonical path; a later entry of the same name and kind replaces an earlier one. */
  const planned = new Map<string, Planned>();
  const tempLinks: string[] = [];
  const createdDirs: string[] = [...(limits.createdDirs ?? [])];
  /** The entry being worked on (entries come one at a time) and its content stream. */
  let current: Promise<void> = Promise.resolve();
  let currentEntry: { destroy(err?: Error): void } | undefined;
  let entries = 0;
  let bytes = 0;
  let failure: unknown;
  const finished = new Promise<void>((resolveDone, reject) => {
    extract.on('finish', () => resolveDone());
    extract.on('error', reject);
  });
  finished.catch(() => {}); // observed through commit()

  /** Makes the directories of `segments` below the target, refusing anything but real dirs inside the root. */
  async function ensureDir(segments: string[]): Promise<string> {
    let current = targetDir;
    for (const segment of segments) {
      const next = join(current, segment);
      // Not on disk yet, so lstat would not see it: mkdir here would make the rename fail later.
      const earlier = planned.get(next);
      if (earlier) throw new TransferError('exists', `${earlier.name} is ${KIND_SHOWN[earlier.kind]} in this archive, not a directory`);
      let stats;
      try {
        stats = await lstat(next);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
        limits.journal?.dir(next);
        await mkdir(next, { mode: 0o755 });
        createdDirs.push(next);
        current = next;
        continue;
      }
      if (stats.isSymbolicLink()) {
        const real = await realpath(next).catch((err: NodeJS.ErrnoException) => {
          if (err.code !== 'ENOENT' && err.code !== 'ENOTDIR' && err.code !== 'ELOOP') throw err;
          throw new TransferError('not_a_directory', `${segment} is a symbolic link that leads nowhere`);
        });
        if (!isInside(realRoot, real)) throw new TransferError('path_outside_root', `${segment} is a link leading outside the files root`);
        if (!(await lstat(real)).isDirectory()) throw new TransferError('not_a_directory', `${segment} is not a directory`);
        current = real;
      } else if (stats.isDirectory()) {
        current = next;
      } else {
        throw new TransferError('exists', `${segment} exists and is not a directory`);
      }
    }
    return current;
  }

  async function stageFile(segments: string[], header: tar.Header, stream: NodeJS.ReadableStream): Promise<void> {
    const dir = await ensureDir(segments.slice(0, -1));
    const base = segments.at(-1)!;
    const final = join(dir, base);
    await assertReplaceable(final, segments.join('/'));
    claim(final, { kind: 'file', name: segments.join('/') });
    // A header may claim any size: refuse at once what cannot fit rather than fill the disk.
    const space = await statfs(dir);
    if (header.size > space.bavail * space.bsize) {
      throw new TransferError('too_large', `${segments.join('/')} is ${header.size} bytes; only ${space.bavail * space.bsize} are free there`);
    }
    const temp = tempNameFor(dir, base);
    limits.journal?.file(temp);
    const handle = await open(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
    if (failure) {
      // Aborted while the file was being created, perhaps after the cleanup ran: remove it here.
      await handle.close();
      await unlink(temp).catch(() => {});
      throw failure;
    }
    staged.push({ temp, final, mode: header.mode & 0o777, mtime: header.mtime });
    try {
      // A directory swapped for a symlink after ensureDir would show here.
      await assertOpenedInside(handle, realRoot, segments.join('/'));
      const counter = new Transform({
        transform(chunk: Buffer, _enc, done) {
          limits.onBytes?.(chunk.length);
          done(null, chunk);
        },
      });
      await pipeline(stream, counter, createWriteStream('', { fd: handle.fd, autoClose: false, highWaterMark: 256 * 1024 }));
      await handle.sync();
    } finally {
      await handle.close();
    }
  }

  /** Refuses to put a file or link where a directory, device, FIFO or socket is. */
  async function assertReplaceable(final: string, shown: string): Promise<void> {
    const existing = await lstat(final).catch(() => undefined);
    if (existing?.isDirectory()) throw new TransferError('exists', `${shown} exists and is a directory`);
    // A rename would replace a device, FIFO or socket (think /dev/null) with a regular file.
    if (existing && !existing.isFile() && !existing.isSymbolicLink()) {
      throw new TransferError('exists', `${shown} exists and is not a regular file`);
    }
  }

  /** One name, one kind: a file and a link of the same name cannot both land, so neither does. */
  function claim(final: string, entry: Planned): void {
    const earlier = planned.get(final);
    if (earlier && earlier.kind !== entry.kind) {
      throw new TransferError('exists', `${entry.name} is in the archive both as ${KIND_SHOWN[earlier.kind]} and as ${KIND_SHOWN[entry.kind]}`);
    }
    planned.set(final, entry);
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
      throw new TransferError('path_outside_root', `symbolic link ${header.name} -> ${target} leads outside the files root`);
    }
    if (Buffer.byteLength(target) >= MAX_ENTRY_NAME) {
      throw new TransferError('bad_params', `symbolic link ${header.name} has a target longer than ${MAX_ENTRY_NAME - 1} bytes`);
    }
    await assertReplaceable(final, segments.join('/'));
    claim(final, { kind: 'link', dir, final, target, name: header.name });
  }

  /** The tree once every entry is in place: what is on disk, overlaid with this archive. */
  const finalTree: TreeView = {
    kindOf: async (path) => planned.get(path)?.kind ?? diskKind(path),
    linkTarget: async (path) => {
      const entry = planned.get(path);
      return entry?.kind === 'link' ? entry.target : readlink(path);
    },
  };

  function plannedLinks(): PlannedLink[] {
    return [...planned.values()].filter((p): p is PlannedLink => p.kind === 'link');
  }

  /** Refuses the archive if any of its links could lead outside the root (see linkProblem). */
  async function judgeLinks(): Promise<void> {
    for (const link of plannedLinks()) {
      const problem = await linkProblem(realRoot, link.dir, link.target, finalTree);
      if (problem) throw new TransferError('path_outside_root', `symbolic link ${link.name} -> ${link.target} ${problem}`);
    }
  }

  /** Makes each link under a temporary name beside it, so that placing it is a rename too. */
  async function stageLinks(): Promise<Map<PlannedLink, string>> {
    const temps = new Map<PlannedLink, string>();
    for (const link of plannedLinks()) {
      const temp = tempNameFor(link.dir, basename(link.final));
      limits.journal?.file(temp);
      tempLinks.push(temp);
      await symlink(link.target, temp);
      // The directory swapped for a link leading out since it was checked would show here.
      if ((await realpath(link.dir)) !== link.dir) {
        throw new TransferError('path_outside_root', `symbolic link ${link.name}: its directory moved while the archive arrived`);
      }
      temps.set(link, temp);
    }
    return temps;
  }

  extract.on('entry', (header, stream, next) => {
    currentEntry = stream;
    // An abort destroys the entry with an error, maybe before anything reads it: without a
    // listener that error would be uncaught and end the process (the failure is reported anyway).
    stream.on('error', () => {});
    const work = (current = (async () => {
      if (failure) throw failure;
      if (++entries > limits.maxEntries) throw new TransferError('too_large', `the archive has more than ${limits.maxEntries} entries`);
      const segments = limits.rename ? limits.rename(safeSegments(header.name)) : safeSegments(header.name);
      if (segments.length === 0) return; // the target directory itself
      switch (header.type) {
        case 'file':
        case 'contiguous-file': {
          bytes += header.size;
          if (limits.maxBytes > 0 && bytes > limits.maxBytes) {
            throw new TransferError('too_large', `the archive exceeds ${limits.limitHolder ?? 'the'} limit of ${limits.maxBytes} bytes`);
          }
          await stageFile(segments, header, stream as unknown as NodeJS.ReadableStream);
          return;
        }
        case 'directory':
          await ensureDir(segments);
          return;
        case 'symlink':
          await planLink(segments, header);
          return;
        case 'link':
          throw new TransferError('path_outside_root', `hard link ${header.name} refused: only files, directories and symbolic links are accepted`);
        default:
          throw new TransferError('bad_params', `${header.type} ${header.name} refused: only files, directories and symbolic links are accepted`);
      }
    })());
    work.then(
      () => {
        stream.resume(); // drain whatever an entry without content left
        next();
      },
      (err: unknown) => {
        failure ??= err;
        stream.resume();
        next(err as Error);
      },
    );
  });

  async function removeStaged(): Promise<void> {
    for (const s of staged) await unlink(s.temp).catch(() => {});
    for (const temp of tempLinks) await unlink(temp).catch(() => {});
    for (const dir of createdDirs.slice().reverse()) await rmdir(dir).catch(() => {});
  }

  return {
    /** The writable end to feed tar bytes into (honour its backpressure). */
    input: extract as unknown as NodeJS.WritableStream,

    /**
     * Ends the input, waits for every entry, judges the archive as a whole, and moves everything
     * into place. Every refusal, and every step that creates something, comes before the first
     * rename, so a refused archive changes nothing; only the renames themselves come after.
     */
    async commit(): Promise<ExtractResult> {
      (extract as unknown as NodeJS.WritableStream).end();
      await finished;
      if (failure) throw failure;
      await judgeLinks();
      const linkTemps = await stageLinks();
      for (const s of staged) {
        await chmod(s.temp, s.mode || 0o644);
        await utimes(s.temp, s.mtime, s.mtime);
      }
      const dirs = new Set<string>();
      for (const s of staged) {
        await rename(s.temp, s.final);
        dirs.add(dirname(s.final));
      }
      for (const [link, temp] of linkTemps) {
        await rename(temp, link.final);
        dirs.add(link.dir);
      }
      // Make the renames themselves durable.
      for (const dir of dirs) {
        const handle = await open(dir, constants.O_RDONLY).catch(() => undefined);
        await handle?.sync().catch(() => {});
        await handle?.close();
      }
      limits.journal?.end();
      return { files: staged.length, bytes };
    },

    /** Stops extracting and removes every temporary file and created directory. */
    async abort(reason: unknown): Promise<void> {
      failure ??= reason;
      const err = reason instanceof Error ? reason : new Error(String(reason));
      extract.destroy(err);
      currentEntry?.destroy(err); // so the file being written is closed, not left waiting for data
      // Let the writer let go of its file, but never wait on a stream that does not settle.
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.allSettled([finished, current]),
        new Promise((resolve) => (timer = setTimeout(resolve, ABORT_GRACE_MS))),
      ]);
      clearTimeout(timer);
      await removeStaged();
      limits.journal?.end();
    },

    /** The first problem met, if any (the caller answers with it at once). */
    get failure(): unknown {
      return failure;
    },
    extract,
  };
}
export type Extraction = ReturnType<typeof createExtraction>;
