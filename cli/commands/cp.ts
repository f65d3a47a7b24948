/**
 * @module `tether cp SRC DST`: files and directories to or from a device, `DEVICE:PATH` on one
 * side. Like `cp -r`, a destination that is an existing directory receives the source inside
 * it; otherwise the source is stored under the destination's name. A destination ending in `/`
 * names a directory: when it does not exist it is created (its parent must exist, as with rsync),
 * and the source goes inside it; it is never a file's name. A progress bar shows on a
 * terminal; the counts and sizes that arrived are checked against what was sent; the session
 * is closed when the copy ends, whatever the outcome.
 */
import { lstat, mkdir, rmdir } from 'node:fs/promises';
import { basename, dirname, posix, resolve } from 'node:path';
import { fileEntry, type FileEntry } from '../../shared/protocol/session-stream';
import type { Context } from '../context';
import { CliError, usageError } from '../errors';
import { formatBytes } from '../output';
import { createProgress } from '../progress';
import { withSessionStream } from '../sessions';
import type { ClientStream } from '../stream';
import { download, measure, upload } from '../transfer';

const REMOTE = /^([A-Za-z0-9._-]{1,64}):(.*)$/s;

export interface RemoteSpec {
  device: string;
  path: string;
}

/** `DEVICE:PATH`, unless it is clearly a local path (`./a:b`, `/x:y`). */
export function parseRemote(arg: string): RemoteSpec | undefined {
  if (arg.startsWith('/') || arg.startsWith('.')) return undefined;
  const m = REMOTE.exec(arg);
  if (!m) return undefined;
  return { device: m[1]!, path: m[2] === '' ? '/' : m[2]! };
}

/**
 * The entry at `path` on the device, or the device's `not_found` error: its message says where
 * the agent's files root is, which is what a reader needs when a path is not there.
 */
async function remoteStat(stream: ClientStream, path: string): Promise<FileEntry | CliError> {
  try {
    return await stream.request('stat', { path }, fileEntry);
  } catch (err) {
    if (err instanceof CliError && err.code === 'not_found') return err;
    throw err;
  }
}

const found = (stat: FileEntry | CliError): FileEntry | undefined => (stat instanceof CliError ? undefined : stat);

async function localStat(path: string) {
  try {
    return await lstat(path);
  } catch {
    return undefined;
  }
}

export interface CpFlags {
  replace?: boolean;
  waitOnline?: boolean;
  progress?: boolean;
}

export async function cp(ctx: Context, src: string, dst: string, flags: CpFlags): Promise<void> {
  const from = parseRemote(src);
  const to = parseRemote(dst);
  if (from && to) throw usageError('both sides are on devices; one side must be a local path');
  if (!from && !to) throw usageError('both sides are local; write DEVICE:PATH on one side');
  const device = (from ?? to)!.device;
  const open = { device, protocol: 'file-transfer' as const, replace: flags.replace, waitOnline: flags.waitOnline, notice: ctx.notice };
  await withSessionStream(ctx.api(), open, async (stream) => {
    const started = performance.now();
    const result = to ? await toDevice(ctx, stream, resolve(src), to, flags) : await fromDevice(stream, from!, resolve(dst), /[/\\]$/.test(dst), flags);
    const seconds = (performance.now() - started) / 1000;
    ctx.notice(
      `copied ${result.files} file${result.files === 1 ? '' : 's'}, ${formatBytes(result.bytes)} in ${seconds.toFixed(1)} s` +
        (seconds > 0 ? ` (${formatBytes(Math.round(result.bytes / seconds))}/s); sizes checked` : ''),
    );
  });
}

async function toDevice(ctx: Context, stream: ClientStream, local: string, to: RemoteSpec, flags: CpFlags) {
  const src = await localStat(local);
  if (!src) throw new CliError(`no such file or directory: ${local}`, 'local_file');
  if (!src.isFile() && !src.isDirectory()) throw new CliError(`${local} is neither a file nor a directory`, 'local_file');
  const target = found(await remoteStat(stream, to.path));
  const wantsDir = to.path.endsWith('/');
  let remoteDir: string;
  let topName: string;
  if (target?.type === 'dir') {
    remoteDir = to.path;
    topName = basename(local);
  } else if (wantsDir) {
    // `dev:/dir/`: a directory, created with its upload (the agent removes it if the upload fails).
    if (target) throw new CliError(`not a directory on ${to.device}: ${to.path}`, 'not_a_directory');
    const parentPath = posix.dirname(to.path.replace(/\/+$/, '')) || '/';
    const parent = await remoteStat(stream, parentPath);
    // The device's own words say where its files root is.
    if (parent instanceof CliError) throw new CliError(`${parent.message} (a destination ending in / is created, not its parents)`, parent.code);
    if (parent.type !== 'dir') throw new CliError(`not a directory on ${to.device}: ${parentPath}`, 'not_a_directory');
    remoteDir = to.path;
    topName = basename(local);
  } else {
    if (target && src.isDirectory()) throw new CliError(`cannot overwrite the file ${to.device}:${to.path} with a directory`, 'not_a_directory');
    remoteDir = posix.dirname(to.path);
    topName = posix.basename(to.path);
    const parent = await remoteStat(stream, remoteDir);
    if (parent instanceof CliError) throw parent;
    if (parent.type !== 'dir') throw new CliError(`not a directory on ${to.device}: ${remoteDir}`, 'not_a_directory');
  }
  const total = await measure(local);
  const progress = createProgress(`→ ${to.device}`, total.bytes, flags.progress);
  try {
    return await upload(
      stream,
      { local, remoteDir, topName },
      (n) => progress.add(n),
      (name, why) => ctx.notice(`skipped ${name}: ${why}`),
    );
  } finally {
    progress.stop();
  }
}

async function fromDevice(stream: ClientStream, from: RemoteSpec, local: string, wantsDir: boolean, flags: CpFlags) {
  const source = await remoteStat(stream, from.path);
  if (source instanceof CliError) throw source;
  const target = await localStat(local);
  let localDir: string;
  let topName: string;
  const remoteName = posix.basename(from.path) || from.device;
  let created: string | undefined;
  if (target?.isDirectory()) {
    localDir = local;
    topName = remoteName;
  } else if (wantsDir) {
    if (target) throw new CliError(`not a directory: ${local}`, 'local_file');
    if (!(await localStat(dirname(local)))?.isDirectory()) {
      throw new CliError(`no such directory: ${dirname(local)} (a destination ending in / is created, not its parents)`, 'local_file');
    }
    await mkdir(local);
    created = local;
    localDir = local;
    topName = remoteName;
  } else {
    if (target && source.type === 'dir') throw new CliError(`cannot overwrite the file ${local} with a directory`, 'local_file');
    if (target && !target.isFile() && !target.isSymbolicLink()) {
      throw new CliError(`${local} is not a regular file; tether cp writes whole files and renames them into place`, 'local_file');
    }
    localDir = dirname(local);
    topName = basename(local);
    if (!(await localStat(localDir))?.isDirectory()) throw new CliError(`no such directory: ${localDir}`, 'local_file');
  }
  const progress = createProgress(`← ${from.device}`, source.type === 'file' ? source.size : undefined, flags.progress);
  try {
    return await download(stream, { remote: from.path, localDir, topName }, (n) => progress.add(n));
  } catch (err) {
    if (created) await rmdir(created).catch(() => undefined); // only if the failed copy left it empty
    throw err;
  } finally {
    progress.stop();
  }
}
