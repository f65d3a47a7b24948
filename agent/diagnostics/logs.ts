/**
 * @module `log.tail`: the last lines of a regular file inside one of the log dirs, read backwards
 * from the end in chunks so a huge log costs no more than the lines asked for (at most 16 MiB
 * read, at most 1 MiB of lines in the reply).
 *
 * A path is judged by its text before anything on disk is looked at, so the answer for a path
 * outside the log dirs is the same whether it exists or not; symbolic links are resolved after
 * that and must stay inside. Only regular files are opened, without blocking (a FIFO would
 * hold a file thread until someone wrote to it). The reply keeps the newest lines that fit in
 * 1 MiB of JSON, far below the relay's 4 MiB frame limit, and says whether it left any out.
 */
import { readlink, realpath } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';
import { isInside, openRegularConfined } from '../../shared/files/confine';
import type { LogTail } from '../../shared/protocol/diagnostics';
import { OpError } from '../../shared/protocol/op-error';

export const MAX_TAIL_LINES = 10_000;
/** The most the lines of one reply take as JSON (escaping included). */
export const MAX_TAIL_REPLY_BYTES = 1024 * 1024;
const CHUNK = 64 * 1024;
const MAX_READ = 16 * 1024 * 1024;

export async function logTail(logDirs: readonly string[], path: string, lines: number): Promise<LogTail> {
  const { root, real } = await confineToLogDirs(logDirs, path);
  const handle = await openRegularConfined(root, real, path);
  try {
    const { size } = await handle.stat();
    const chunks: Buffer[] = [];
    let newlines = 0;
    let position = size;
    let read = 0;
    let firstNewline = -1; // offset of the first newline in what was read, -1 while none
    // Read until one more newline than lines wanted (the text after it is whole lines), or until
    // the whole lines read are more than a reply can carry: each of their bytes costs at least
    // one byte of JSON.
    while (position > 0 && newlines <= lines && read < MAX_READ) {
      if (firstNewline >= 0 && read - firstNewline - newlines > MAX_TAIL_REPLY_BYTES) break;
      const length = Math.min(CHUNK, position);
      position -= length;
      const buf = Buffer.alloc(length);
      await handle.read(buf, 0, length, position);
      chunks.unshift(buf);
      read += length;
      const first = buf.indexOf(10);
      if (first >= 0) firstNewline = first;
      else if (firstNewline >= 0) firstNewline += length;
      for (const byte of buf) if (byte === 10) newlines++;
    }
    const text = Buffer.concat(chunks).toString('utf8');
    const all = text.split('\n');
    if (all.at(-1) === '') all.pop(); // the file's final newline ends the last line
    // The first piece may be part of an earlier line; alone, it is the end of a line longer
    // than MAX_READ, and the newest text there is.
    if (position > 0 && all.length > 1) all.shift();
    const capped = capToReply(all.slice(-lines));
    const stoppedShort = position > 0 && newlines <= lines; // the file had more of the lines asked for
    return { path, lines: capped.lines, truncated: capped.truncated || stoppedShort };
  } finally {
    await handle.close();
  }
}

/**
 * The real path of `path` and the real log dir it is in. Anything whose normalised text is not
 * inside a log dir (as configured, or as its real path: they differ when a log dir is or lies
 * under a symbolic link) is `path_outside_root` before the disk is asked about it. Links are
 * followed after that, and where they lead must be inside a log dir too, existing or not.
 */
async function confineToLogDirs(logDirs: readonly string[], path: string): Promise<{ root: string; real: string }> {
  if (!isAbsolute(path)) throw new OpError('bad_params', 'params.path must be an absolute path');
  if (path.includes('\0')) throw new OpError('bad_params', 'params.path contains a NUL byte');
  const outside = new OpError('path_outside_root', `${path} is not inside the log dirs (${logDirs.join(', ')})`);
  const lexical = resolve(path); // `.`, `..` and repeated slashes, by the text alone
  const realDirs = await Promise.all(logDirs.map((dir) => realpath(dir).catch(() => undefined)));
  const lexicallyIn = (dir: string | undefined) => dir !== undefined && isInside(dir, lexical);
  if (!logDirs.some((dir, i) => lexicallyIn(dir) || lexicallyIn(realDirs[i]))) throw outside;

  const { real, exists } = await whereItLeads(lexical);
  const root = realDirs.find((dir) => dir !== undefined && isInside(dir, real));
  const inMissingDir = logDirs.some((dir, i) => realDirs[i] === undefined && lexicallyIn(dir));
  if (!exists && (root || inMissingDir)) throw new OpError('not_found', `no such file: ${path}`);
  if (!root) throw outside;
  return { root, real };
}

/** Dangling links followed in a row before giving up, as the kernel's ELOOP limit. */
const MAX_LINK_HOPS = 40;

/**
 * The real path of `path` when it exists; otherwise where it would be: the real path of its
 * deepest existing ancestor plus the rest, following dangling links, so a missing path is judged
 * by where it leads as an existing one is and the answer does not tell which it is.
 */
async function whereItLeads(path: string): Promise<{ real: string; exists: boolean }> {
  const missing: string[] = [];
  let at = path;
  for (let hops = 0; hops <= MAX_LINK_HOPS;) {
    try {
      const real = await realpath(at);
      return { real: join(real, ...missing), exists: missing.length === 0 };
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' && code !== 'ENOTDIR') throw err;
    }
    const target = await readlink(at).catch(() => undefined);
    if (target !== undefined) {
      // A dangling link: its target is relative to the real directory holding it.
      at = resolve(await realpath(dirname(at)), target);
      hops++;
    } else {
      missing.unshift(basename(at));
      at = dirname(at);
    }
  }
  throw new OpError('path_outside_root', `${path}: too many symbolic links`);
}

/**
 * The newest of `lines` whose JSON encoding (quotes, escapes and commas) fits in
 * MAX_TAIL_REPLY_BYTES. A control character takes six bytes as JSON, so the byte count is taken
 * of each line's encoding, not of its text. When even the newest line alone does not fit, its
 * end is kept, cut to a length that fits however it escapes.
 */
function capToReply(lines: string[]): { lines: string[]; truncated: boolean } {
  let budget = MAX_TAIL_REPLY_BYTES - 1; // the brackets, less the comma the oldest line goes without
  let first = lines.length;
  while (first > 0) {
    const cost = Buffer.byteLength(JSON.stringify(lines[first - 1])) + 1; // with its comma
    if (cost > budget) break;
    budget -= cost;
    first--;
  }
  if (first === 0) return { lines, truncated: false };
  if (first < lines.length) return { lines: lines.slice(first), truncated: true };
  // At most 6 bytes of JSON per UTF-16 unit (`\u0001`); 4 for the brackets and quotes.
  let end = lines[first - 1].slice(-Math.floor((MAX_TAIL_REPLY_BYTES - 4) / 6));
  if (/^[\uDC00-\uDFFF]/.test(end)) end = end.slice(1); // half of a surrogate pair
  return { lines: [end], truncated: true };
}
