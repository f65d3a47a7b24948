/**
 * @module The recording of one shell session, in asciicast v2 (`shared/asciicast.ts`), kept off
 * the keystroke path: the broker's taps only queue what passes (a timestamp from the monotonic
 * clock and a slice), and a batch is encoded, compressed (in the thread pool) and appended to the
 * file every 250 ms, or sooner when 256 KiB wait. Each batch is a gzip member of its own, so the
 * file is always a valid gzip stream up to its last batch, whatever happens to the server. UTF-8
 * sequences split across frames are carried over to the next batch (a StringDecoder per direction).
 *
 * Nothing here can slow or end the session: a queue that falls 16 MiB behind, a file that would
 * pass the size cap, a store that is full (`store-budget.ts`), or a failing disk ends the
 * recording as `truncated`, and the stream goes on. A recording the store refused from the start
 * holds its header and one `m` event saying why, and nothing of the session.
 */
import { createHash } from 'node:crypto';
import { open, type FileHandle } from 'node:fs/promises';
import { StringDecoder } from 'node:string_decoder';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import { castEventLine, castHeaderLine, type CastCode } from '../../shared/asciicast';
import type { Logger } from '../../shared/log';
import type { StreamRecording } from '../../shared/recording';
import type { RecordingProgress } from '../store/recordings';
import { messageTap } from './frame-messages';
import type { StoreBudget } from './store-budget';

const gzipAsync = promisify(gzip);

const FLUSH_MS = 250;
const FLUSH_BYTES = 256 * 1024;
/** Queued and not yet written: past this the recording has fallen behind for good. */
const QUEUE_MAX = 16 * 1024 * 1024;
/** The most text one gzip member holds (each is written whole, or not at all). */
const MEMBER_BYTES = 64 * 1024;
/** Smaller slices are copied, so that a keystroke does not keep a 64 KiB read buffer alive. */
const COPY_BELOW = 1024;

type Pending =
  | { t: number; code: 'o' | 'i'; data: Buffer }
  /** A text message from the client (resize) or the device (exit). */
  | { t: number; code: 'client-text' | 'device-text'; data: Buffer }
  | { t: number; code: 'm'; data: string };

export interface RecordingOptions {
  sessionId: string;
  deviceId: string;
  username: string;
  /** The file, opened for appending. */
  path: string;
  /** Wall clock at the start (the header's timestamp). */
  startedAt: number;
  recordInput: boolean;
  /** The compressed file's largest size. */
  maxStoredBytes: number;
  /** The store as a whole; absent, only `maxStoredBytes` bounds the file. */
  budget?: StoreBudget | undefined;
  /** Set when the store refused this recording: why (the file then says so, and nothing else). */
  refusal?: string | undefined;
  log: Logger;
  /** Where the recording stands, after each stretch (a stream's end, the session's close). */
  onProgress(progress: RecordingProgress): void;
  /** Wall clock, for `ended_at`. */
  now(): number;
}

/** Where a recording stands now: the session record shows it. */
export interface LiveRecording {
  bytes: number;
  stored_bytes: number;
  duration_s: number;
  sha256: string;
  truncated: boolean;
  /** A stream is being recorded. */
  recording: boolean;
}

/** How long a closing session waits for its streams on other nodes to send their end. */
export const STREAM_END_GRACE_MS = 5_000;

export class SessionRecording {
  readonly #o: RecordingOptions;
  readonly #startMono = performance.now();
  #queue: Pending[] = [];
  #queued = 0;
  #decoders = { o: new StringDecoder('utf8'), i: new StringDecoder('utf8') };
  readonly #hash = createHash('sha256');
  #bytes = 0;
  #stored = 0;
  #lastT = 0;
  #headerWritten = false;
  #size = { width: 80, height: 24 };
  #truncated = false;
  #stopped = false;
  #file: Promise<FileHandle> | undefined;
  #timer: NodeJS.Timeout | undefined;
  #flushing: Promise<void> | undefined;
  #again = false;
  #streams = 0;
  #streamCount = 0;
  /** Streams' ends still being written. */
  readonly #ending = new Set<Promise<void>>();
  /** When the last stream ended (wall clock), while none is being recorded. */
  #endedAt: number | undefined;
  #closing = false;
  /** Waiting in `close` for the streams still recorded to end. */
  #idleWaiters: Array<() => void> = [];

  constructor(options: RecordingOptions) {
    this.#o = options;
    this.#truncated = options.refusal !== undefined;
  }

  /** A stream of the session starts: the taps the broker puts on it. */
  streamStarted(): StreamRecording {
    this.#streams++;
    this.#endedAt = undefined;
    if (++this.#streamCount === 1 && this.#o.refusal !== undefined) {
      this.#push({ t: performance.now(), code: 'm', data: `not recorded: ${this.#o.refusal}` }, true);
    }
    if (this.#streamCount > 1) this.#push({ t: performance.now(), code: 'm', data: `stream ${this.#streamCount}` });
    let ended = false;
    return {
      fromClient: messageTap(
        (slice) => this.#o.recordInput && this.#pushBytes('i', slice),
        (text) => this.#push({ t: performance.now(), code: 'client-text', data: text }),
      ),
      fromDevice: messageTap(
        (slice) => this.#pushBytes('o', slice),
        (text) => this.#push({ t: performance.now(), code: 'device-text', data: text }),
      ),
      end: () => {
        if (ended) return;
        ended = true;
        const work = this.#streamEnded();
        this.#ending.add(work);
        void work.finally(() => this.#ending.delete(work));
      },
    };
  }

  live(): LiveRecording {
    return {
      bytes: this.#bytes,
      stored_bytes: this.#stored,
      duration_s: this.#lastT,
      sha256: this.#hash.copy().digest('hex'),
      truncated: this.#truncated,
      // Until a stream's last batch is written, the file does not hold all of it yet.
      recording: this.#streams > 0 || this.#ending.size > 0 || this.#closing,
    };
  }

  /** The compressed bytes written so far: a reader of the file stops there (complete batches only). */
  get storedBytes(): number {
    return this.#stored;
  }

  /** The session closed: writes what is left, records the end, lets go of the file. */
  async close(): Promise<void> {
    this.#closing = true;
    // A stream spliced on another node of a cluster ends a moment after the session (its node
    // hears of the close, then sends its last frames and its end): wait for it, a while.
    if (this.#streams > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, STREAM_END_GRACE_MS);
        this.#idleWaiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    await Promise.allSettled([...this.#ending]);
    await this.#flush();
    this.#stopped = true;
    await this.#closeFile();
    this.#endedAt ??= this.#o.now();
    this.#o.onProgress(this.#progress());
    this.#closing = false;
  }

  #progress(): RecordingProgress {
    return {
      ended_at: this.#endedAt === undefined ? null : new Date(this.#endedAt).toISOString(),
      duration_s: this.#lastT,
      bytes: this.#bytes,
      sha256: this.#hash.copy().digest('hex'),
      stored_bytes: this.#stored,
      truncated: this.#truncated,
    };
  }

  #pushBytes(code: 'o' | 'i', slice: Buffer): void {
    this.#push({ t: performance.now(), code, data: slice.length < COPY_BELOW ? Buffer.from(slice) : slice });
  }

  /** Queues an event; a refused recording takes its `note` only. */
  #push(event: Pending, note = false): void {
    if (this.#stopped || (this.#o.refusal !== undefined && !note)) return;
    const size = event.data.length;
    if (this.#queued + size > QUEUE_MAX) return this.#truncate('the recording fell 16 MiB behind the session');
    this.#queue.push(event);
    this.#queued += size;
    if (this.#queued >= FLUSH_BYTES) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
      setImmediate(() => void this.#flush());
    } else {
      this.#timer ??= setTimeout(() => {
        this.#timer = undefined;
        void this.#flush();
      }, FLUSH_MS);
    }
  }

  #truncate(why: string): void {
    if (this.#truncated) return;
    this.#truncated = true;
    this.#stopped = true;
    this.#queue = [];
    this.#queued = 0;
    clearTimeout(this.#timer);
    this.#o.log.warn('recording truncated; the session goes on unrecorded', { session_id: this.#o.sessionId, why });
  }

  async #streamEnded(): Promise<void> {
    if (--this.#streams === 0) {
      this.#endedAt = this.#o.now();
      for (const wake of this.#idleWaiters.splice(0)) wake();
    }
    // What a decoder holds back (half a UTF-8 sequence) will not be completed by this stream.
    for (const code of ['o', 'i'] as const) {
      const rest = this.#decoders[code].end();
      if (rest) this.#push({ t: performance.now(), code, data: Buffer.from(rest) });
      this.#decoders[code] = new StringDecoder('utf8');
    }
    await this.#flush();
    if (this.#streams === 0) await this.#closeFile();
    this.#o.onProgress(this.#progress());
  }

  /** Writes everything queued; one batch at a time, and again if more came meanwhile. */
  #flush(): Promise<void> {
    if (this.#flushing) {
      this.#again = true;
      return this.#flushing;
    }
    this.#flushing = (async () => {
      do {
        this.#again = false;
        await this.#writeBatch();
      } while (this.#again || this.#queue.length > 0);
    })()
      .catch((err: Error) => this.#truncate(`writing the recording failed: ${err.message}`))
      .finally(() => (this.#flushing = undefined));
    return this.#flushing;
  }

  async #writeBatch(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const events = this.#queue;
    this.#queue = [];
    this.#queued = 0;
    if (events.length === 0 || this.#stopped) return;
    if (!this.#headerWritten) {
      // The terminal's size as the client first said it, if it said it in time for the header.
      for (const e of events) {
        const size = e.code === 'client-text' ? resizeOf(e.data) : undefined;
        if (size) {
          this.#size = { width: size.cols, height: size.rows };
          break;
        }
      }
      // The header is a member of its own: however large the first output, the file starts as a cast.
      const header = castHeaderLine({
        version: 2,
        width: this.#size.width,
        height: this.#size.height,
        timestamp: Math.floor(this.#o.startedAt / 1000),
        title: `tether ${this.#o.sessionId}: ${this.#o.username} on ${this.#o.deviceId}`,
        env: { TERM: 'xterm-256color' },
        tether: { session_id: this.#o.sessionId, device_id: this.#o.deviceId, user: this.#o.username, input: this.#o.recordInput },
      });
      // Always written (a few hundred bytes, beyond the store's bounds): a recording is a cast.
      if (!(await this.#writeMember(header, true))) return;
      this.#headerWritten = true;
    }
    // Members of at most MEMBER_BYTES: the size cap then cuts between small steps, and what
    // came before the cut is kept. A refusal's note is written whatever the store's bounds say,
    // so that the refusal is on record.
    const note = this.#o.refusal !== undefined;
    let text = '';
    for (const e of events) {
      text += this.#encode(e);
      if (text.length >= MEMBER_BYTES) {
        if (!(await this.#writeMember(text, note))) return;
        text = '';
      }
    }
    if (text !== '') await this.#writeMember(text, note);
  }

  /**
   * Compresses and appends one member; false when a size cap stopped the recording. `force`:
   * beyond the store's bounds (the header, a refusal's note), not beyond the file's own cap.
   */
  async #writeMember(text: string, force = false): Promise<boolean> {
    const raw = Buffer.from(text, 'utf8');
    const member = await gzipAsync(raw);
    if (this.#stopped) return false;
    if (this.#stored + member.length > this.#o.maxStoredBytes) {
      this.#truncate(`the recording reached its size cap of ${this.#o.maxStoredBytes} bytes`);
      return false;
    }
    const refused = this.#o.budget?.claim(member.length, force);
    if (refused) {
      this.#truncate(refused.why);
      return false;
    }
    try {
      const file = await (this.#file ??= open(this.#o.path, 'a', 0o600));
      await file.write(member);
    } catch (err) {
      this.#o.budget?.release(member.length);
      throw err;
    }
    this.#stored += member.length;
    this.#bytes += raw.length;
    this.#hash.update(raw);
    return true;
  }

  /** One event's line, or '' when it says nothing (an unknown text message, half a character). */
  #encode(e: Pending): string {
    const t = Math.max(this.#lastT, (e.t - this.#startMono) / 1000);
    let code: CastCode;
    let data: string;
    switch (e.code) {
      case 'o':
      case 'i':
        code = e.code;
        data = this.#decoders[e.code].write(e.data);
        break;
      case 'client-text': {
        const size = resizeOf(e.data);
        if (!size) return '';
        code = 'r';
        data = `${size.cols}x${size.rows}`;
        break;
      }
      case 'device-text': {
        const exit = exitOf(e.data);
        if (exit === undefined) return '';
        code = 'm';
        data = `exit ${exit}`;
        break;
      }
      case 'm':
        code = 'm';
        data = e.data;
        break;
    }
    if (data === '') return '';
    this.#lastT = t;
    return castEventLine(t, code, data);
  }

  async #closeFile(): Promise<void> {
    const file = this.#file;
    this.#file = undefined;
    if (!file) return;
    const handle = await file.catch(() => undefined);
    await handle?.sync().catch(() => {});
    await handle?.close().catch(() => {});
  }
}

function jsonOf(text: Buffer): Record<string, unknown> | undefined {
  try {
    const value = JSON.parse(text.toString('utf8')) as unknown;
    return value !== null && typeof value === 'object' ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** A shell resize message's size (docs/session-streams.md), or undefined. */
function resizeOf(text: Buffer): { cols: number; rows: number } | undefined {
  const m = jsonOf(text);
  const { cols, rows } = m ?? {};
  if (m?.type !== 'resize' || !Number.isInteger(cols) || !Number.isInteger(rows)) return undefined;
  if ((cols as number) < 1 || (cols as number) > 1000 || (rows as number) < 1 || (rows as number) > 1000) return undefined;
  return { cols: cols as number, rows: rows as number };
}

/** A shell exit message's code, or undefined. */
function exitOf(text: Buffer): number | undefined {
  const m = jsonOf(text);
  return m?.type === 'exit' && Number.isInteger(m.code) ? (m.code as number) : undefined;
}
