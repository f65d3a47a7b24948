/**
 * @module A recording's queue, kept off the keystroke path: the taps only queue what passes, and a
 * batch is encoded (`cast-encoder.ts`) and appended to the file (`cast-file.ts`) every 250 ms, or
 * sooner when 256 KiB wait, one batch at a time. Nothing here can slow or end the session: a queue
 * that falls 16 MiB behind, a size cap, a full store or a failing disk truncate the recording,
 * which stops there while the stream goes on.
 */
import type { Logger } from '../../shared/log';
import { CastEncoder, type CastIdentity, type PendingEvent } from './cast-encoder';
import { CastFile, compressMember, type CastFileOptions } from './cast-file';

const FLUSH_MS = 250;
const FLUSH_BYTES = 256 * 1024;
/** Queued and not yet written: past this the recording has fallen behind for good. */
const QUEUE_MAX = 16 * 1024 * 1024;
/** The most text one gzip member holds (each is written whole, or not at all). */
const MEMBER_BYTES = 64 * 1024;

export interface CastWriterOptions extends CastIdentity, CastFileOptions {
  /** Set when the store refused this recording: why (the file then says so, and nothing else). */
  refusal?: string | undefined;
  log: Logger;
}

/** What a recording's file holds so far. */
export interface Written {
  bytes: number;
  stored_bytes: number;
  duration_s: number;
  sha256: string;
  truncated: boolean;
}

export class CastWriter {
  readonly #o: CastWriterOptions;
  readonly #encoder = new CastEncoder();
  readonly #file: CastFile;
  #queue: PendingEvent[] = [];
  #queued = 0;
  #headerWritten = false;
  #truncated: boolean;
  #stopped = false;
  #timer: NodeJS.Timeout | undefined;
  #flushing: Promise<void> | undefined;
  #again = false;

  constructor(options: CastWriterOptions) {
    this.#o = options;
    this.#file = new CastFile(options);
    this.#truncated = options.refusal !== undefined;
  }

  written(): Written {
    return {
      bytes: this.#file.bytes,
      stored_bytes: this.#file.stored,
      duration_s: this.#encoder.lastT,
      sha256: this.#file.sha256(),
      truncated: this.#truncated,
    };
  }

  /** The compressed bytes written so far: a reader of the file stops there (complete batches only). */
  get storedBytes(): number {
    return this.#file.stored;
  }

  /** Queues terminal bytes that passed one way (a copy: the slice is a view of the relay's read buffer, which it reuses). */
  pushBytes(code: 'o' | 'i', slice: Buffer): void {
    this.push({ t: performance.now(), code, data: Buffer.from(slice) });
  }

  /** Queues an event; a refused recording takes its `note` only. */
  push(event: PendingEvent, note = false): void {
    if (this.#stopped || (this.#o.refusal !== undefined && !note)) return;
    const size = event.data.length;
    if (this.#queued + size > QUEUE_MAX) return this.#truncate('the recording fell 16 MiB behind the session');
    this.#queue.push(event);
    this.#queued += size;
    if (this.#queued >= FLUSH_BYTES) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
      setImmediate(() => void this.flush());
    } else {
      this.#timer ??= setTimeout(() => {
        this.#timer = undefined;
        void this.flush();
      }, FLUSH_MS);
    }
  }

  /** A stream ended: what its decoders hold back is queued, since it will not be completed. */
  streamEnded(): void {
    for (const { code, rest } of this.#encoder.endStream()) this.push({ t: performance.now(), code, data: Buffer.from(rest) });
  }

  /** Writes everything queued; one batch at a time, and again if more came meanwhile. */
  flush(): Promise<void> {
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

  /** Lets go of the file until more is written. */
  closeFile(): Promise<void> {
    return this.#file.close();
  }

  /** Writes what is left, takes nothing more, lets go of the file. */
  async finish(): Promise<void> {
    await this.flush();
    this.#stopped = true;
    await this.#file.close();
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

  async #writeBatch(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const events = this.#queue;
    this.#queue = [];
    this.#queued = 0;
    if (events.length === 0 || this.#stopped) return;
    if (!this.#headerWritten) {
      // The header is a member of its own: however large the first output, the file starts as a cast.
      // Always written (a few hundred bytes, beyond the store's bounds): a recording is a cast.
      if (!(await this.#writeMember(this.#encoder.header(this.#o, events), true))) return;
      this.#headerWritten = true;
    }
    // Members of at most MEMBER_BYTES: the size cap then cuts between small steps, and what
    // came before the cut is kept. A refusal's note is written whatever the store's bounds say,
    // so that the refusal is on record.
    const note = this.#o.refusal !== undefined;
    let text = '';
    for (const e of events) {
      text += this.#encoder.line(e);
      if (text.length >= MEMBER_BYTES) {
        if (!(await this.#writeMember(text, note))) return;
        text = '';
      }
    }
    if (text !== '') await this.#writeMember(text, note);
  }

  /** Compresses and appends one member; false when the recording stopped, or a bound stopped it. */
  async #writeMember(text: string, force = false): Promise<boolean> {
    const member = await compressMember(text);
    if (this.#stopped) return false;
    const refused = this.#file.claim(member, force);
    if (refused) {
      this.#truncate(refused);
      return false;
    }
    await this.#file.append(member);
    return true;
  }
}
