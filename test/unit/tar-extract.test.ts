/** Safe extraction: aborted at the worst moment, and never replacing special files. */
import { execFileSync } from 'node:child_process';
import { lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createExtraction } from '../../shared/tar-extract';
import { tempDir } from '../helpers/stack';
import { tarOf } from '../helpers/tar';
import { waitFor } from '../helpers/wait';

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
