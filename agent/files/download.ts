/**
 * @module `download`: a file or directory tree as one tar stream, names relative to the path's
 * parent. Files are opened with O_NOFOLLOW and checked after opening, streamed in 256 KiB
 * chunks with backpressure all the way to the socket; symbolic links that lead out of the files
 * root are left out.
 */
import { constants, createReadStream } from 'node:fs';
import { lstat, open, opendir, readlink, realpath } from 'node:fs/promises';
import { dirname, join, relative, resolve, sep } from 'node:path';
import type { Writable } from 'node:stream';
import * as tar from 'tar-stream';
import { assertOpenedInside, isInside } from './confine';

type TarHeader = Partial<tar.Header> & Pick<tar.Header, 'name'>;

export const READ_CHUNK = 256 * 1024;

export interface DownloadResult {
  files: number;
  bytes: number;
}

/** Writes the tar of `real` (canonical, inside `realRoot`) to `out`; aborts on `signal`. */
export async function streamDownload(realRoot: string, real: string, out: Writable, signal: AbortSignal): Promise<DownloadResult> {
  const pack = tar.pack();
  const base = dirname(real);
  const result: DownloadResult = { files: 0, bytes: 0 };

  function addEntry(header: TarHeader, source?: NodeJS.ReadableStream): Promise<void> {
    return new Promise((resolveEntry, reject) => {
      const done = (err?: Error | null) => (err ? reject(err) : resolveEntry());
      // Entries without content (directories, links, empty files) are written whole at once.
      if (!source) return void pack.entry(header, Buffer.alloc(0), done);
      const entry = pack.entry(header, done);
      source.on('error', (err) => {
        entry.destroy(err);
        reject(err);
      });
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
    const name = relative(base, path).split(sep).join('/');
    const stats = await lstat(path);
    if (stats.isSymbolicLink()) {
      const target = await readlink(path);
      const resolved = await realpath(resolve(dirname(path), target)).catch(() => undefined);
      if (resolved && isInside(realRoot, resolved)) {
        await addEntry({ name, type: 'symlink', linkname: target, mode: 0o777, mtime: stats.mtime });
      }
    } else if (stats.isDirectory()) {
      await addEntry({ name: `${name}/`, type: 'directory', mode: stats.mode & 0o777, mtime: stats.mtime });
      const children: string[] = [];
      for await (const dirent of await opendir(path)) children.push(dirent.name);
      children.sort();
      for (const child of children) await walk(join(path, child));
    } else if (stats.isFile()) {
      await addFile(path, name);
    }
  }

  const onAbort = () => pack.destroy(new Error('download aborted'));
  signal.addEventListener('abort', onAbort);
  const delivered = new Promise<void>((resolveOut, reject) => {
    pack.on('error', reject);
    out.on('error', reject);
    out.on('finish', resolveOut);
    pack.pipe(out);
  });
  try {
    await walk(real);
    pack.finalize();
    await delivered;
  } catch (err) {
    pack.destroy(err as Error);
    throw err;
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
  return result;
}
