/**
 * @module A file or directory tree as one tar stream (the agent's `download`, the client's
 * upload), names relative to the path's parent. Files are opened with O_NOFOLLOW and checked
 * after opening, streamed in 1 MiB chunks with backpressure all the way to the socket; symbolic
 * links that lead out of the files root are left out.
 */
import { constants, createReadStream } from 'node:fs';
import { lstat, open, opendir, readlink, realpath } from 'node:fs/promises';
import { dirname, join, relative, resolve, sep } from 'node:path';
import type { Writable } from 'node:stream';
import * as tar from 'tar-stream';
import { assertOpenedInside, isInside } from './confine';

type TarHeader = Partial<tar.Header> & Pick<tar.Header, 'name'>;

export const READ_CHUNK = 1024 * 1024;

export interface PackResult {
  files: number;
  bytes: number;
}

export interface PackOptions {
  signal: AbortSignal;
  /** The name of the top entry in the archive (default: the path's own name). */
  topName?: string;
  /** File content read so far, for progress. */
  onBytes?: (bytes: number) => void;
  /** An entry left out (a link leading outside the root, a socket or device file). */
  onSkip?: (name: string, why: string) => void;
}

/** Writes the tar of `real` (canonical, inside `realRoot`) to `out`; aborts on `signal`. */
export async function packTree(realRoot: string, real: string, out: Writable, options: PackOptions): Promise<PackResult> {
  const { signal } = options;
  const pack = tar.pack({ highWaterMark: 4 * 1024 * 1024 });
  const base = dirname(real);
  const result: PackResult = { files: 0, bytes: 0 };
  const topName = options.topName;

  function addEntry(header: TarHeader, source?: NodeJS.ReadableStream): Promise<void> {
    return new Promise((resolveEntry, reject) => {
      const done = (err?: Error | null) => (err ? reject(err) : resolveEntry());
      // Entries without content (directories, links, empty files) are written whole at once.
      if (!source) return void pack.entry(header, Buffer.alloc(0), done);
      const entry = pack.entry(header, done);
      // A destroyed pack (aborted, or its reader gone) errors its open entry: handled here,
      // or the error would escape and end the agent.
      entry.on('error', reject);
      source.on('error', (err) => {
        entry.destroy(err);
        reject(err);
      });
      if (options.onBytes) source.on('data', (chunk: Buffer) => options.onBytes!(chunk.length));
      source.pipe(entry as unknown as NodeJS.WritableStream);
    });
  }

  async function addFile(path: string, name: string): Promise<void> {
    const handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW);
    try {
      await assertOpenedInside(handle, realRoot, name);
      const stats = await handle.stat();
      if (!stats.isFile()) return;
      const header: TarHeader = { name, type: 'file', size: stats.size, mode: stats.mode & 0o777, mtime: stats.mtime };
      if (stats.size === 0) {
        await addEntry(header);
      } else {
        // Exactly the size announced in the header, even if the file grows meanwhile.
        const source = createReadStream('', { fd: handle.fd, autoClose: false, start: 0, end: stats.size - 1, highWaterMark: READ_CHUNK });
        await addEntry(header, source);
      }
      result.files++;
      result.bytes += stats.size;
    } finally {
      await handle.close();
    }
  }

  async function walk(path: string): Promise<void> {
    if (signal.aborted) throw new Error('download aborted');
    const relativeName = relative(base, path).split(sep);
    if (topName !== undefined) relativeName[0] = topName;
    const name = relativeName.join('/');
    const stats = await lstat(path);
    if (stats.isSymbolicLink()) {
      const target = await readlink(path);
      const resolved = await realpath(resolve(dirname(path), target)).catch(() => undefined);
      if (resolved && isInside(realRoot, resolved)) {
        await addEntry({ name, type: 'symlink', linkname: target, mode: 0o777, mtime: stats.mtime });
      } else {
        options.onSkip?.(name, `symbolic link to ${target} leads outside`);
      }
    } else if (stats.isDirectory()) {
      await addEntry({ name: `${name}/`, type: 'directory', mode: stats.mode & 0o777, mtime: stats.mtime });
      const children: string[] = [];
      for await (const dirent of await opendir(path)) children.push(dirent.name);
      children.sort();
      for (const child of children) await walk(join(path, child));
    } else if (stats.isFile()) {
      await addFile(path, name);
    } else {
      options.onSkip?.(name, 'not a regular file, directory or link');
    }
  }

  const onAbort = () => pack.destroy(new Error('download aborted'));
  signal.addEventListener('abort', onAbort);
  const delivered = new Promise<void>((resolveOut, reject) => {
    pack.on('error', reject);
    out.on('error', (err) => {
      pack.destroy(err); // the reader is gone: stop walking, fail the entry being written
      reject(err);
    });
    out.on('finish', resolveOut);
    pack.pipe(out);
  });
  // Awaited after the walk; a failure during the walk is handled there, not left unhandled.
  delivered.catch(() => {});
  try {
    await walk(real);
    pack.finalize();
    await delivered;
  } catch (err) {
    pack.destroy(err as Error);
    // Aborted: whatever step noticed first (the walk, an entry of the destroyed pack), the
    // reason is the abort.
    if (signal.aborted) throw new Error('download aborted');
    throw err;
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
  return result;
}
