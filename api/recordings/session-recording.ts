/**
 * @module The recording of one shell session, in asciicast v2: the taps the relay puts on each of
 * its streams, and the streams' lifecycle (several may come and go; a closing session waits a
 * while for those still recorded on other nodes). What the taps pass is queued and written in
 * batches by `cast-writer.ts`, off the keystroke path: nothing here can slow or end the session.
 * A recording the store refused from the start holds its header and one `m` event saying why,
 * and nothing of the session.
 */
import type { StreamRecording } from '../../shared/relay/recording';
import type { RecordingProgress } from '../store/recordings';
import { CastWriter, type CastWriterOptions, type Written } from './cast-writer';
import { messageTap } from './frame-messages';

export interface RecordingOptions extends CastWriterOptions {
  /** Records where the recording stands, after each stretch (a stream's end, the session's close); never rejects. */
  onProgress(progress: RecordingProgress): Promise<void>;
  /** Wall clock, for `ended_at`. */
  now(): number;
}

/** Where a recording stands now: the session record shows it. */
export interface LiveRecording extends Written {
  /** A stream is being recorded. */
  recording: boolean;
}

/** How long a closing session waits for its streams on other nodes to send their end. */
export const STREAM_END_GRACE_MS = 5_000;

export class SessionRecording {
  readonly #o: RecordingOptions;
  readonly #writer: CastWriter;
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
    this.#writer = new CastWriter(options);
  }

  /** A stream of the session starts: the taps the relay puts on it. */
  streamStarted(): StreamRecording {
    this.#streams++;
    this.#endedAt = undefined;
    const writer = this.#writer;
    if (++this.#streamCount === 1 && this.#o.refusal !== undefined) {
      writer.push({ t: performance.now(), code: 'm', data: `not recorded: ${this.#o.refusal}` }, true);
    }
    if (this.#streamCount > 1) writer.push({ t: performance.now(), code: 'm', data: `stream ${this.#streamCount}` });
    let ended = false;
    return {
      fromClient: messageTap(
        (slice) => this.#o.recordInput && writer.pushBytes('i', slice),
        (text) => writer.push({ t: performance.now(), code: 'client-text', data: text }),
      ),
      fromDevice: messageTap(
        (slice) => writer.pushBytes('o', slice),
        (text) => writer.push({ t: performance.now(), code: 'device-text', data: text }),
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
      ...this.#writer.written(),
      // Until a stream's last batch is written, the file does not hold all of it yet.
      recording: this.#streams > 0 || this.#ending.size > 0 || this.#closing,
    };
  }

  /** The compressed bytes written so far: a reader of the file stops there (complete batches only). */
  get storedBytes(): number {
    return this.#writer.storedBytes;
  }

  /** The session closed: writes what is left, records the end (resolves once it is recorded), lets go of the file. */
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
    await this.#writer.finish();
    this.#endedAt ??= this.#o.now();
    await this.#o.onProgress(this.#progress());
    this.#closing = false;
  }

  #progress(): RecordingProgress {
    const { duration_s, bytes, sha256, stored_bytes, truncated } = this.#writer.written();
    return {
      ended_at: this.#endedAt === undefined ? null : new Date(this.#endedAt).toISOString(),
      duration_s,
      bytes,
      sha256,
      stored_bytes,
      truncated,
    };
  }

  async #streamEnded(): Promise<void> {
    if (--this.#streams === 0) {
      this.#endedAt = this.#o.now();
      for (const wake of this.#idleWaiters.splice(0)) wake();
    }
    this.#writer.streamEnded();
    await this.#writer.flush();
    if (this.#streams === 0) await this.#writer.closeFile();
    await this.#o.onProgress(this.#progress());
  }
}
