/**
 * packTree against a reader that goes away: whether the download is aborted while the socket is
 * stalled or the socket fails under it, packTree rejects once and nothing escapes as an
 * unhandled error (vitest fails the file on any).
 */
import { truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { packTree } from '../../../../shared/files/tar-pack';
import { tempDir } from '../../../helpers/stack';
import { waitFor } from '../../../helpers/wait';

function tree(): string {
  const root = tempDir('tether-pack-');
  for (let i = 0; i < 3; i++) truncateSync((writeFileSync(join(root, `big-${i}`), ''), join(root, `big-${i}`)), 64 * 1024 * 1024);
  return root;
}

/** Settles on the next turns: any unhandled error raised meanwhile is reported by vitest. */
const turns = () => new Promise((r) => setTimeout(r, 50));

describe('packTree when the reader goes away', () => {
  it('aborted while the socket is stalled: one rejection, nothing unhandled', async () => {
    const root = tree();
    let written = 0;
    const stalled = new Writable({
      highWaterMark: 64 * 1024,
      write(chunk: Buffer, _e, _callback) {
        written += chunk.length; // never calls back: a client that stopped reading
      },
    });
    const controller = new AbortController();
    const packing = packTree(root, root, stalled, { signal: controller.signal });
    await waitFor(() => written > 0, 'the first chunk');
    controller.abort();
    await expect(packing).rejects.toThrow(/aborted/);
    await turns();
  });

  it('the socket fails under it: one rejection, nothing unhandled', async () => {
    const root = tree();
    let calls = 0;
    const failing = new Writable({
      highWaterMark: 64 * 1024,
      write(_chunk, _e, callback) {
        if (++calls > 3) callback(new Error('the stream closed'));
        else callback();
      },
    });
    const controller = new AbortController();
    const packing = packTree(root, root, failing, { signal: controller.signal });
    await expect(packing).rejects.toThrow(/stream closed/);
    controller.abort(); // the handler aborts too once it learns the stream is gone
    await turns();
  });
});
