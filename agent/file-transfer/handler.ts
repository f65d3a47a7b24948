/**
 * @module The `file-transfer` protocol's handler: `list`, `stat`, `download` and `upload` (tar
 * streams), `remove`, `mkdir` and `rename` (tree-ops.ts), one transfer at a time per stream, everything confined to the files root, which every
 * error about a path names (root-errors.ts). An upload's temporary files are journaled
 * (upload-journal.ts) so a killed agent removes them on restart.
 */
import { lstat, mkdir, realpath, rmdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import * as z from 'zod/mini';
import { resolveConfined } from '../../shared/files/confine';
import {
  mkdirParams,
  removeParams,
  renameParams,
  type DownloadDone,
  type OpErrorBody,
  type Request,
  type Response,
} from '../../shared/protocol/session-stream';
import { createExtraction, type Extraction } from '../../shared/files/tar-extract';
import { packTree } from '../../shared/files/tar-pack';
import type { Handler, HandlerFactory } from '../protocol-handler';
import { OpError } from '../../shared/protocol/op-error';
import { paramsOf, parseRequest, toErrorBody } from '../requests';
import { existing, listEntries, statEntry } from './entries';
import { placeInFilesRoot } from './root-errors';
import { makeDirectory, removeEntry, renameEntry } from './tree-ops';

const pathParams = z.strictObject({ path: z.string().check(z.minLength(1), z.maxLength(4096)) });
const listParams = z.strictObject({
  path: z.string().check(z.minLength(1), z.maxLength(4096)),
  limit: z._default(z.int().check(z.gte(1), z.lte(100_000)), 10_000),
});

/** Most entries one upload may hold (a tar bomb of empty files is still a bomb). */
export const MAX_UPLOAD_ENTRIES = 100_000;

interface Transfer {
  id: number;
  abort(reason: string): Promise<void>;
  upload?: Extraction;
}

export const startFileTransfer: HandlerFactory = (stream, ctx): Handler => {
  const root = ctx.config.filesRoot;
  let transfer: Transfer | undefined;
  let failedUploadId: number | undefined;

  const reply = (id: number, result: unknown): void => void stream.sendJson({ id, ok: true, result } satisfies Response);
  /** Answers request `id` with the error's code and message; returns what it sent. */
  function replyError(id: number, err: unknown): OpErrorBody {
    const error = placeInFilesRoot(err, toErrorBody(err, ctx.log), ctx.config);
    stream.sendJson({ id, ok: false, error } satisfies Response);
    return error;
  }

  async function download(req: Request): Promise<void> {
    const { path } = paramsOf(pathParams, req);
    const real = await existing(root, path);
    const realRoot = await realpath(root);
    const controller = new AbortController();
    transfer = { id: req.id, abort: async () => controller.abort() };
    reply(req.id, { format: 'tar' });
    try {
      const result = await packTree(realRoot, real, stream.binaryWritable(), { signal: controller.signal });
      stream.sendJson({ id: req.id, done: true, bytes: result.bytes, files: result.files } satisfies DownloadDone);
      ctx.log.info('download done', { path, ...result });
    } finally {
      transfer = undefined;
    }
  }

  async function upload(req: Request): Promise<void> {
    const { path } = paramsOf(pathParams, req);
    const realRoot = await realpath(root);
    const target = await resolveConfined(root, path);
    if (target.missing.length === 0 && !(await lstat(target.path)).isDirectory()) {
      throw new OpError('not_a_directory', `${path} is not a directory`);
    }
    // Missing directories of the target belong to this upload: journaled, and removed with it.
    const journal = ctx.uploadJournal?.();
    const made: string[] = [];
    try {
      let dir = target.path;
      for (let i = 0; i < target.missing.length; i++) dir = dirname(dir); // the deepest existing ancestor
      for (const segment of target.missing) {
        dir = join(dir, segment);
        journal?.dir(dir);
        await mkdir(dir, { mode: 0o755 });
        made.push(dir);
      }
    } catch (err) {
      for (const dir of made.reverse()) await rmdir(dir).catch(() => {});
      journal?.end();
      throw err;
    }
    const up = createExtraction(realRoot, await realpath(target.path), {
      maxBytes: ctx.config.maxUploadBytes,
      maxEntries: MAX_UPLOAD_ENTRIES,
      limitHolder: "this device's",
      journal,
      createdDirs: made,
    });
    const current: Transfer = { id: req.id, upload: up, abort: (reason) => up.abort(new Error(reason)) };
    transfer = current;
    // A refused entry answers at once; the rest of the archive is discarded as it arrives.
    up.extract.on('error', () => void fail(current, up.failure ?? new OpError('io_error', 'the archive is not a valid tar stream')));
    reply(req.id, { ready: true });
  }

  async function fail(t: Transfer, err: unknown): Promise<void> {
    if (transfer !== t) return;
    transfer = undefined;
    failedUploadId = t.id;
    stream.resume();
    await t.abort('upload failed');
    ctx.log.warn('upload refused', { error: replyError(t.id, err) });
  }

  async function endUpload(req: Request): Promise<void> {
    const t = transfer;
    if (!t?.upload || t.id !== req.id) {
      if (req.id === failedUploadId) return; // already answered with its error
      throw new OpError('bad_params', `no upload ${req.id} is in progress`);
    }
    try {
      const result = await t.upload.commit();
      transfer = undefined;
      reply(req.id, result);
      ctx.log.info('upload done', { ...result });
    } catch (err) {
      await fail(t, err);
    }
  }

  async function serve(req: Request): Promise<void> {
    try {
      if (req.op === 'end') return await endUpload(req);
      if (transfer) throw new OpError('busy', `transfer ${transfer.id} is in progress; one at a time per stream`);
      switch (req.op) {
        case 'list': {
          const p = paramsOf(listParams, req);
          return reply(req.id, await listEntries(root, p.path, p.limit));
        }
        case 'stat':
          return reply(req.id, await statEntry(root, paramsOf(pathParams, req).path));
        case 'download':
          return await download(req);
        case 'upload':
          return await upload(req);
        case 'remove':
          return reply(req.id, await removeEntry(root, paramsOf(removeParams, req)));
        case 'mkdir':
          return reply(req.id, await makeDirectory(root, paramsOf(mkdirParams, req)));
        case 'rename':
          return reply(req.id, await renameEntry(root, paramsOf(renameParams, req)));
        default:
          throw new OpError('unknown_op', `unknown op ${req.op}; known: list, stat, download, upload, end, remove, mkdir, rename`);
      }
    } catch (err) {
      replyError(req.id, err);
    }
  }

  stream.on('text', (text) => {
    const req = parseRequest(stream, text);
    if (req) void serve(req);
  });

  stream.on('binary', (data) => {
    const up = transfer?.upload;
    if (!up) return; // the tail of a refused upload
    if (!up.input.write(data)) {
      stream.pause();
      up.extract.once('drain', () => stream.resume());
    }
  });

  let stopping: Promise<void> | undefined;
  const handler: Handler = {
    stop: (reason) =>
      (stopping ??= (async () => {
        const t = transfer;
        transfer = undefined;
        if (t) {
          ctx.log.info('aborting transfer', { id: t.id, reason });
          await t.abort(reason);
        }
        stream.close(1000, 'file transfer ended');
      })()),
  };
  stream.on('close', () => void handler.stop('stream closed'));
  return handler;
};
