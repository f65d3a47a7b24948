/**
 * @module One session data stream (the WebSocket the agent dialled for it) as a handler sees it:
 * JSON text frames, binary frames, and write backpressure. `sendBinary` returns false once more
 * than `highWaterMark` bytes are accepted but not yet written to the kernel; 'drain' fires when
 * that falls to `lowWaterMark`. The frames each protocol exchanges: docs/session-streams.md, frames.
 */
import { EventEmitter } from 'node:events';
import { Writable } from 'node:stream';
import type { WsClient } from '../shared/websocket/client';

export const DATA_STREAM_HIGH_WATER = 4 * 1024 * 1024;
export const DATA_STREAM_LOW_WATER = 1024 * 1024;
const BINARY_WRITABLE_HIGH_WATER = 1024 * 1024;

export interface DataStreamEvents {
  text: [data: string];
  /** The client's binary bytes as they arrive (message boundaries are not kept). */
  binary: [data: Buffer];
  close: [code: number, reason: string];
  drain: [];
  /** Everything sent so far has been written out. */
  idle: [];
}

export class DataStream extends EventEmitter<DataStreamEvents> {
  #pending = 0;
  #closed = false;

  constructor(
    private readonly ws: WsClient,
    private readonly highWaterMark = DATA_STREAM_HIGH_WATER,
    private readonly lowWaterMark = DATA_STREAM_LOW_WATER,
  ) {
    super();
    ws.on('binary', (data) => this.emit('binary', data));
    ws.on('text', (text) => this.emit('text', text));
    ws.once('close', (code, reason) => {
      this.#closed = true;
      this.emit('close', code, reason);
    });
  }

  get closed(): boolean {
    return this.#closed || this.ws.state !== 'open';
  }

  /** Bytes accepted but not yet written. */
  get pending(): number {
    return this.#pending;
  }

  #send(data: Buffer | readonly Buffer[] | string): boolean {
    if (this.closed) return false;
    const size = typeof data === 'string' ? Buffer.byteLength(data) : Buffer.isBuffer(data) ? data.length : data.reduce((n, b) => n + b.length, 0);
    this.#pending += size;
    this.ws.send(data, () => {
      const above = this.#pending > this.lowWaterMark;
      this.#pending -= size;
      if (above && this.#pending <= this.lowWaterMark) this.emit('drain');
      if (this.#pending === 0) this.emit('idle');
    });
    return this.#pending <= this.highWaterMark;
  }

  sendBinary(data: Buffer): boolean {
    return this.#send(data);
  }

  /** One binary frame made of `parts`, sent without joining them. */
  sendBinaryParts(parts: readonly Buffer[]): boolean {
    return this.#send(parts);
  }

  sendJson(message: unknown): boolean {
    return this.#send(JSON.stringify(message));
  }

  /** Stops reading the peer's frames (they wait in the kernel and, beyond, at the peer). */
  pause(): void {
    this.ws.pause();
  }

  resume(): void {
    if (this.ws.isPaused) this.ws.resume();
  }

  /** Resolves once everything sent so far has been written out (or the stream closed). */
  async flushed(): Promise<void> {
    if (this.#pending === 0 || this.closed) return;
    await new Promise<void>((resolve) => {
      const done = () => {
        this.off('idle', done);
        this.off('close', done);
        resolve();
      };
      this.once('idle', done);
      this.once('close', done);
    });
  }

  /** Ends the stream once (later calls do nothing); the reason is cut to fit a close frame. */
  close(code: number, reason: string): void {
    this.ws.close(code, reason);
  }

  /** A Writable whose chunks go out as binary frames, honouring the stream's backpressure. */
  binaryWritable(): Writable {
    return new Writable({
      // Room for a whole read chunk (1 MiB): with less, every chunk of a download made the packer
      // wait a turn for 'drain', and the socket got smaller writes (BENCHMARKS.md, issue 14).
      highWaterMark: BINARY_WRITABLE_HIGH_WATER,
      write: (chunk: Buffer, _encoding, callback) => {
        if (this.closed) return callback(new Error('the stream closed'));
        if (this.sendBinary(chunk)) return callback();
        const onDrain = () => {
          this.off('close', onClose);
          callback();
        };
        const onClose = () => {
          this.off('drain', onDrain);
          callback(new Error('the stream closed'));
        };
        this.once('drain', onDrain);
        this.once('close', onClose);
      },
    });
  }
}
