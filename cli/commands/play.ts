/**
 * @module `tether session play SESSION_ID`: a session's recording replayed in this terminal at its
 * own pace (`--speed`, `--idle-limit` to shorten long pauses; space pauses and resumes, q or
 * Ctrl-C stops), or saved as an asciicast file with `--cast FILE` for asciinema and auditors.
 * The cast is read as it arrives, never held whole.
 */
import { createWriteStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { pipeline } from 'node:stream/promises';
import { parseCastEvent, parseCastHeader } from '../../shared/asciicast';
import type { Context } from '../context';
import { CliError } from '../errors';
import { formatBytes, formatDuration } from '../output';

export interface PlayFlags {
  speed?: number;
  idleLimit?: number;
  cast?: string;
}

const recordingPath = (id: string) => `/v1/remote-access/sessions/${encodeURIComponent(id)}/recording`;

export async function sessionPlay(ctx: Context, sessionId: string, flags: PlayFlags): Promise<number> {
  const res = await ctx.api().stream(recordingPath(sessionId));
  if (flags.cast) {
    let bytes = 0;
    res.on('data', (c: Buffer) => (bytes += c.length));
    try {
      await pipeline(res, createWriteStream(flags.cast, { mode: 0o644 }));
    } catch (err) {
      throw new CliError(`could not save the recording to ${flags.cast}: ${(err as Error).message}`, 'local_file');
    }
    ctx.notice(`saved the recording of ${sessionId} to ${flags.cast} (${formatBytes(bytes)}; asciicast v2: asciinema play ${flags.cast})`);
    return 0;
  }
  return replay(ctx, res, { speed: flags.speed ?? 1, idleLimit: flags.idleLimit });
}

/** Plays the cast's output events in time; resolves with the exit code once done or stopped. */
async function replay(ctx: Context, cast: NodeJS.ReadableStream, o: { speed: number; idleLimit: number | undefined }): Promise<number> {
  const { stdin, stdout } = process;
  const keys = stdin.isTTY === true;
  let paused = false;
  let stopped = false;
  let pausedAt = 0;
  let pausedFor = 0;
  let wake: (() => void) | undefined;
  const onKey = (data: Buffer) => {
    const key = data.toString();
    if (key === ' ') {
      paused = !paused;
      if (paused) pausedAt = performance.now();
      else {
        pausedFor += performance.now() - pausedAt;
        wake?.();
      }
    } else if (key === 'q' || key === '\u0003') {
      stopped = true;
      wake?.();
    }
  };
  if (keys) {
    stdin.setRawMode(true);
    stdin.on('data', onKey);
    stdin.resume();
  }
  const restore = () => {
    if (!keys) return;
    stdin.off('data', onKey);
    stdin.setRawMode(false);
    stdin.pause();
  };
  process.once('exit', restore);

  /** Waits until `at` (ms on the performance clock, paused time not counted), or a key. */
  const until = async (at: number): Promise<void> => {
    for (;;) {
      if (stopped) return;
      const left = paused ? Infinity : at + pausedFor - performance.now();
      if (left <= 0) return;
      await new Promise<void>((resolve) => {
        wake = resolve;
        if (left !== Infinity) setTimeout(resolve, left);
      });
      wake = undefined;
    }
  };

  const start = performance.now();
  let clock = 0; // the cast's time so far, idle gaps shortened
  let last = 0;
  let header = false;
  try {
    for await (const line of createInterface({ input: cast, crlfDelay: Infinity })) {
      if (stopped) break;
      if (!header) {
        const h = parseCastHeader(line);
        if (!h) throw new CliError('the recording is not an asciicast v2 file', 'bad_answer');
        header = true;
        if (stdout.isTTY && (stdout.columns < h.width || stdout.rows < h.height)) {
          ctx.notice(`tether: the recording is ${h.width}x${h.height}; this terminal is ${stdout.columns}x${stdout.rows}`);
        }
        continue;
      }
      const event = parseCastEvent(line);
      if (!event) continue;
      const gap = Math.max(0, event[0] - last);
      last = event[0];
      clock += o.idleLimit === undefined ? gap : Math.min(gap, o.idleLimit);
      if (event[1] !== 'o') continue;
      await until(start + (clock * 1000) / o.speed);
      if (stopped) break;
      if (!stdout.write(event[2])) await new Promise((resolve) => stdout.once('drain', resolve));
    }
  } finally {
    restore();
    process.off('exit', restore);
  }
  if (!header) throw new CliError('the recording is empty', 'bad_answer');
  ctx.notice(`\r\ntether: ${stopped ? 'stopped' : 'end of the recording'} (${formatDuration(last)} recorded)`);
  return 0;
}
