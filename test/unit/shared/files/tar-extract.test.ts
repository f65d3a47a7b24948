/** Safe extraction: aborts at the worst moment, special files, tar bombs and check-then-use races. */
import { execFileSync } from 'node:child_process';
import { constants, lstatSync, readdirSync, realpathSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import * as tar from 'tar-stream';
import { assertOpenedInside } from '../../../../shared/files/confine';
import { createExtraction } from '../../../../shared/files/tar-extract';
import { tempDir } from '../../../helpers/stack';
import { tarOf } from '../../../helpers/tar';
import { waitFor } from '../../../helpers/wait';

describe('tar extraction abort', () => {
  it('an abort while an entry waits for its file leaves nothing and throws nothing', async () => {
    const dir = tempDir();
    const archive = await tarOf([{ header: { name: 'deep/er/file.bin' }, content: Buffer.alloc(64 * 1024, 1) }]);
    const x = createExtraction(dir, dir, { maxBytes: 0, maxEntries: 10 });
    let aborted: Promise<void> | undefined;
    x.extract.on('entry', () => {
      aborted ??= x.abort(new Error('client gone')); // same tick: directories not made, file not open
    });
    x.input.write(archive.subarray(0, 4096)); // the header and the start of the content
    await waitFor(() => aborted !== undefined, 'the entry to arrive');
    await aborted;
    await new Promise((r) => setTimeout(r, 50)); // any late 'error' would surface as unhandled here
    const left = readdirSync(dir, { recursive: true }).map(String);
    expect(left.filter((p) => p.endsWith('.part') || p.endsWith('file.bin'))).toEqual([]);
  });
});

describe('tar extraction onto special files', () => {
  it('refuses to replace a FIFO (or a device such as /dev/null) with a regular file', async () => {
    const dir = tempDir();
    execFileSync('mkfifo', [join(dir, 'pipe')]);
    const archive = await tarOf([{ header: { name: 'pipe' }, content: Buffer.from('data') }]);
    const x = createExtraction(dir, dir, { maxBytes: 0, maxEntries: 10 });
    x.input.write(archive);
    await expect(x.commit()).rejects.toMatchObject({ code: 'exists', message: 'pipe exists and is not a regular file' });
    await x.abort(x.failure);
    expect(lstatSync(join(dir, 'pipe')).isFIFO()).toBe(true);
    expect(readdirSync(dir)).toEqual(['pipe']);
  });
});

describe('tar bombs and races', () => {
  /** Feeds `archive` and resolves with what commit() throws (or undefined). */
  async function extractFails(dir: string, archive: Buffer, limits: Partial<Parameters<typeof createExtraction>[2]> = {}) {
    const x = createExtraction(dir, dir, { maxBytes: 0, maxEntries: 100, ...limits });
    x.input.on('error', () => {});
    x.input.write(archive);
    const err = await x.commit().then(
      () => undefined,
      (e: unknown) => e,
    );
    await x.abort(err ?? new Error('done'));
    return err;
  }

  it('caps the number of entries', async () => {
    const dir = tempDir();
    const archive = await tarOf(Array.from({ length: 11 }, (_, i) => ({ header: { name: `f${i}` }, content: 'x' })));
    expect(await extractFails(dir, archive, { maxEntries: 10 })).toMatchObject({ code: 'too_large', message: 'the archive has more than 10 entries' });
    expect(readdirSync(dir)).toEqual([]);
  });

  it('caps the total size from the headers, before the content arrives', async () => {
    const dir = tempDir();
    const archive = await tarOf([
      { header: { name: 'a' }, content: Buffer.alloc(600) },
      { header: { name: 'b' }, content: Buffer.alloc(600) },
    ]);
    expect(await extractFails(dir, archive, { maxBytes: 1000, limitHolder: "this device's" })).toMatchObject({
      code: 'too_large',
      message: "the archive exceeds this device's limit of 1000 bytes",
    });
    expect(readdirSync(dir)).toEqual([]);
  });

  it('refuses a file larger than the free space at once, without writing it', async () => {
    const dir = tempDir();
    const pack = tar.pack();
    const header = new Promise<Buffer>((resolve) => pack.once('data', (c) => resolve(c as Buffer)));
    pack.entry({ name: 'bomb.bin', size: 2 ** 50 }); // 1 PiB, of which nothing is ever sent
    const x = createExtraction(dir, dir, { maxBytes: 0, maxEntries: 10 });
    x.input.on('error', () => {});
    x.input.write(await header); // the stream stays open: the refusal must not wait for content
    const err = await waitFor(() => x.failure, 'the refusal');
    await x.abort(err);
    expect(err).toMatchObject({ code: 'too_large', message: expect.stringMatching(/^bomb\.bin is 1125899906842624 bytes; only \d+ are free there$/) });
    expect(readdirSync(dir)).toEqual([]);
  });

  it('a directory swapped for a link leading out between the check and the open is caught', async () => {
    const root = tempDir();
    const outside = tempDir();
    const archive = await tarOf([{ header: { name: 'sub/file.txt' }, content: 'payload' }]);
    const x = createExtraction(root, root, {
      maxBytes: 0,
      maxEntries: 10,
      journal: {
        dir() {},
        // Runs after the directory was checked, just before the temp file is opened: the race.
        file() {
          renameSync(join(root, 'sub'), join(root, 'sub.moved'));
          symlinkSync(outside, join(root, 'sub'));
        },
        end() {},
      },
    });
    x.input.write(archive);
    const err = await x.commit().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toMatchObject({ code: 'path_outside_root', message: 'sub/file.txt leads outside the files root' });
    await x.abort(err);
    expect(readdirSync(outside)).toEqual([]); // the file opened out there was removed again
  });
});

describe('assertOpenedInside', () => {
  it('sees through a symlinked parent that O_NOFOLLOW lets pass', async () => {
    const root = realpathSync(tempDir());
    const outside = tempDir();
    writeFileSync(join(outside, 'secret'), 'secret');
    symlinkSync(outside, join(root, 'dir'));
    const handle = await open(join(root, 'dir', 'secret'), constants.O_RDONLY | constants.O_NOFOLLOW);
    try {
      await expect(assertOpenedInside(handle, root, 'dir/secret')).rejects.toMatchObject({ code: 'path_outside_root' });
    } finally {
      await handle.close();
    }
  });
});
