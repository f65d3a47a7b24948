/**
 * @module A `file-push` job on the device: its path resolved inside the files root and confined as
 * every file-transfer path is (`..`, absolute names and links that lead out refused with
 * `path_outside_root`), missing parent directories created (and journaled, so a killed agent
 * removes them on restart with the temporary file), the blob fetched from the agent's server
 * (./blob-fetch) and written over the target atomically (./atomic-write). A failure leaves the
 * target as it was and removes what the push created.
 */
import { lstat, mkdir, realpath, rmdir } from 'node:fs/promises';
import { basename, dirname, join, resolve, sep } from 'node:path';
import { isInside, resolveConfined } from '../../shared/files/confine';
import type { StagingJournal } from '../../shared/files/tar-extract';
import { FILES_ROOT, OpError } from '../../shared/protocol/op-error';
import { placeInFilesRoot } from '../file-transfer/root-errors';
import { toErrorBody } from '../requests';
import { writeAtomically, type AtomicTarget } from './atomic-write';
import { fetchBlob } from './blob-fetch';
import { failed, JobError, type JobContext, type KindRunner } from './outcome';

export const runFilePushJob: KindRunner<'file-push'> = async (work, ctx) => {
  const journal = ctx.journal?.();
  const made: string[] = [];
  try {
    const target = await placeTarget(ctx.config.filesRoot, work.path, journal, made);
    const body = await fetchBlob({ url: ctx.blobUrl(work.blob_id), deviceId: ctx.config.deviceId, token: ctx.config.token, signal: ctx.signal });
    try {
      await writeAtomically(target, body, { size: work.size, sha256: work.sha256, mode: Number.parseInt(work.mode, 8) }, journal);
    } finally {
      body.destroy();
    }
    ctx.log.info('file pushed', { path: work.path, bytes: work.size });
    return { status: 'succeeded' };
  } catch (err) {
    for (const dir of made.reverse()) await rmdir(dir).catch(() => {});
    return failureOf(err, ctx);
  } finally {
    journal?.end();
  }
};

/** What a push that threw reports. */
function failureOf(err: unknown, ctx: JobContext) {
  if (ctx.signal.aborted) return failed('canceled', 'the push was stopped');
  if (err instanceof JobError) return failed(err.code, err.message);
  const body = placeInFilesRoot(err, toErrorBody(err, ctx.log), ctx.config);
  return failed(body.code, body.message);
}

/**
 * Where `path` goes: its canonical directory inside the root (created when missing, each new
 * directory recorded in `made`, outermost first) and its name. The root itself, a directory and
 * anything but a regular file are not replaced.
 */
async function placeTarget(root: string, path: string, journal: StagingJournal | undefined, made: string[]): Promise<AtomicTarget> {
  const realRoot = await realpath(root);
  if (resolve(realRoot, `.${sep}${path}`) === realRoot) throw new OpError('bad_params', `${path} names ${FILES_ROOT} itself`, { namesRoot: true });
  const resolved = await resolveConfined(root, path);
  if (resolved.missing.length === 0) {
    const stats = await lstat(resolved.path);
    if (stats.isDirectory()) throw new OpError('exists', `${path} is a directory`);
    if (!stats.isFile()) throw new OpError('exists', `${path} is not a regular file`);
  }
  // The deepest existing ancestor, then the missing directories below it (all but the file's name).
  let dir = resolved.path;
  for (let i = 0; i < resolved.missing.length; i++) dir = dirname(dir);
  for (const segment of resolved.missing.slice(0, -1)) {
    dir = join(dir, segment);
    journal?.dir(dir);
    await mkdir(dir, { mode: 0o755 });
    made.push(dir);
  }
  // A directory swapped for a link while they were made cannot lead out (pinned again when written).
  const realDir = await realpath(dirname(resolved.path));
  if (!isInside(realRoot, realDir)) throw new OpError('path_outside_root', `${path} leads outside ${FILES_ROOT}`, { namesRoot: true });
  return { dir: realDir, name: basename(resolved.path), realRoot, shown: path };
}
