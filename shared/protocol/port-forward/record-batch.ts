/**
 * @module The data records one side of a port-forward stream sends, batched: the records read in
 * one turn of the event loop leave in one binary frame (and one writev), not one each. At 64 KiB
 * per socket read, a frame per record cost every process on the way a frame's work per read. A
 * batch is sent at the end of the turn, before any control message (so an `end` never overtakes
 * its data), or once it holds BATCH_BYTES.
 */

const BATCH_BYTES = 1024 * 1024;

export class RecordBatch {
  readonly #send: (parts: Buffer[]) => void;
  #parts: Buffer[] = [];
  #bytes = 0;
  #scheduled = false;
  #closed = false;

  /** `send`: the records (headers and payloads, in order) as one binary frame. */
  constructor(send: (parts: Buffer[]) => void) {
    this.#send = send;
  }

  /** Bytes queued and not sent yet. */
  get bytes(): number {
    return this.#bytes;
  }

  queue(header: Buffer, payload: Buffer): void {
    this.#parts.push(header, payload);
    this.#bytes += header.length + payload.length;
    if (this.#bytes >= BATCH_BYTES) return this.flush();
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      this.flush();
    });
  }

  /** Sends what is queued now (before a control message). */
  flush(): void {
    if (this.#parts.length === 0 || this.#closed) return;
    const parts = this.#parts;
    this.#parts = [];
    this.#bytes = 0;
    this.#send(parts);
  }

  /** The stream is gone: what is queued is dropped, nothing more is sent. */
  close(): void {
    this.#closed = true;
    this.#parts = [];
    this.#bytes = 0;
  }
}
