/**
 * @module Writes a file-push's bytes over its target atomically: into a temporary file beside it
 * (`.NAME.tether-HEX.part`, the name the upload journal's recovery removes), checked against the
 * expected size and SHA-256 as the bytes stream by, synced, given its mode, then renamed over the
 * target. Until the rename the target is untouched; a failure removes the temporary file. The
 * directory is pinned by an open descriptor (/proc/self/fd on Linux), as the file-transfer ops
 * pin theirs, so a directory swapped for a link after the check cannot lead the write out of the
 * files root.
 */
import { createHash, randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { lstat, open, rename, unlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { assertOpenedInside } from '../../shared/files/confine';
import type { StagingJournal } from '../../shared/files/tar-extract';
import { JobError } from './outcome';

export interface AtomicTarget {
  /** The canonical directory the file goes in, inside `realRoot`. */
  dir: string;
  name: string;
  realRoot: string;
  /** The path as the job gave it, for messages. */
  shown: string;
}

export interface Expected {
  size: number;
  sha256: string;
  /** The file's permission bits. */
  mode: number;
}

/** Where the bytes come from: read with backpressure; an error while reading is the source's. */
export type ByteSource = AsyncIterable<Buffer>;

/** Writes `source` over `target`; throws JobError (`checksum_mismatch`, `blob_unavailable`), OpError or a system error. */
export async function writeAtomically(target: AtomicTarget, source: ByteSource, expected: Expected, journal?: StagingJournal): Promise<void> {
  const dirHandle = await open(target.dir, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  try {
    await assertOpenedInside(dirHandle, target.realRoot, target.shown);
    const viaFd = `/proc/self/fd/${dirHandle.fd}`;
    const dir = (await lstat(viaFd).then(
      () => true,
      () => false, // no /proc: the canonical path checked before is what we have
    ))
      ? viaFd
      : target.dir;
    // Cut so that the temporary name stays within NAME_MAX whatever the target's name.
    const temp = `.${target.name.slice(0, 200)}.tether-${randomBytes(6).toString('hex')}.part`;
    journal?.file(join(target.dir, temp));
    const file = await open(join(dir, temp), constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
    let renamed = false;
    try {
      await copyChecked(source, file, expected);
      await file.sync();
      await file.chmod(expected.mode);
      await file.close();
      await rename(join(dir, temp), join(dir, target.name));
      renamed = true;
      await dirHandle.sync().catch(() => {}); // so that the rename survives a power cut, where the filesystem allows
    } finally {
      if (!renamed) {
        await file.close().catch(() => {});
        await unlink(join(dir, temp)).catch(() => {});
      }
    }
  } finally {
    await dirHandle.close();
  }
}

/** Copies `source` into `file`, refusing more bytes than expected, and checks size and digest at the end. */
async function copyChecked(source: ByteSource, file: FileHandle, expected: Expected): Promise<void> {
  const hash = createHash('sha256');
  let size = 0;
  let chunks: AsyncIterator<Buffer>;
  try {
    chunks = source[Symbol.asyncIterator]();
  } catch (err) {
    throw sourceError(err);
  }
  for (;;) {
    let next: IteratorResult<Buffer>;
    try {
      next = await chunks.next();
    } catch (err) {
      throw sourceError(err);
    }
    if (next.done) break;
    const chunk = next.value;
    size += chunk.length;
    if (size > expected.size) {
      await chunks.return?.(); // stop reading: what follows would be thrown away
      throw new JobError('checksum_mismatch', `the blob has more than the ${expected.size} bytes expected`);
    }
    hash.update(chunk);
    for (let at = 0; at < chunk.length;) at += (await file.write(chunk, at)).bytesWritten;
  }
  if (size !== expected.size) throw new JobError('checksum_mismatch', `the blob has ${size} bytes, not the ${expected.size} expected`);
  const digest = hash.digest('hex');
  if (digest !== expected.sha256) throw new JobError('checksum_mismatch', `the blob's SHA-256 is ${digest}, not ${expected.sha256}`);
}

/** A failure while reading the bytes: the fetch broke off (or was aborted, which the caller knows). */
function sourceError(err: unknown): Error {
  if (err instanceof JobError) return err;
  return new JobError('blob_unavailable', `the blob's transfer broke off: ${(err as Error).message}`);
}
