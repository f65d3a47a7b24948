/**
 * @module The last bytes of a job command's stdout and stderr, interleaved as they came: a ring
 * of fixed size, so a command that prints gigabytes costs the agent the same few KiB as one that
 * prints a line. Read once at the end as UTF-8 text that starts at a character boundary.
 */

export class OutputTail {
  readonly #ring: Buffer;
  /** Where the next byte goes. */
  #at = 0;
  /** The ring has wrapped: every byte of it holds output. */
  #full = false;

  constructor(readonly capacity: number) {
    this.#ring = Buffer.alloc(capacity);
  }

  push(chunk: Buffer): void {
    const cap = this.capacity;
    if (chunk.length >= cap) {
      chunk.copy(this.#ring, 0, chunk.length - cap);
      this.#at = 0;
      this.#full = true;
      return;
    }
    const first = Math.min(chunk.length, cap - this.#at);
    chunk.copy(this.#ring, this.#at, 0, first);
    if (first < chunk.length) chunk.copy(this.#ring, 0, first);
    const next = this.#at + chunk.length;
    if (next >= cap) this.#full = true;
    this.#at = next % cap;
  }

  /** The bytes kept, oldest first. */
  bytes(): Buffer {
    if (!this.#full) return Buffer.from(this.#ring.subarray(0, this.#at));
    return Buffer.concat([this.#ring.subarray(this.#at), this.#ring.subarray(0, this.#at)]);
  }

  /**
   * The bytes kept as text. When the ring cut a multi-byte character at its start, the cut
   * character's remaining bytes (UTF-8 continuation bytes, at most 3) are left out rather than
   * shown as a replacement character; anything else that is not UTF-8 is replaced (lossy).
   */
  text(): string {
    const bytes = this.bytes();
    let start = 0;
    if (this.#full) while (start < 3 && start < bytes.length && (bytes[start]! & 0xc0) === 0x80) start++;
    return bytes.subarray(start).toString('utf8');
  }
}
