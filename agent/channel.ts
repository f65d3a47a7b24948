/**
 * @module One data WebSocket as a handler sees it: JSON text frames, binary frames, and write
 * backpressure. `sendBinary` returns false once more than `highWaterMark` bytes are accepted
 * but not yet written to the kernel; 'drain' fires when that falls to `lowWaterMark`.
 */
import { EventEmitter } from 'node:events';
import { Writable } from 'node:stream';
import { WebSocket, type RawData } from 'ws';

export const CHANNEL_HIGH_WATER = 4 * 1024 * 1024;
export const CHANNEL_LOW_WATER = 1024 * 1024;

export interface ChannelEvents {
  text: [data: string];
  binary: [data: Buffer];
  close: [code: number, reason: string];
  drain: [];
  /** Everything sent so far has been written out. */
  idle: [];
}

const toBuffer = (data: RawData): Buffer =>
  Array.isArray(data) ? Buffer.concat(data) : Buffer.isBuffer(data) ? data : Buffer.from(data);

export class Channel extends EventEmitter<ChannelEvents> {
  #pending = 0;
  #closed = false;

  constructor(
    private readonly ws: WebSocket,
    private readonly highWaterMark = CHANNEL_HIGH_WATER,
    private readonly lowWaterMark = CHANNEL_LOW_WATER,
  ) {
    super();
    ws.on('message', (data, isBinary) => {
      if (isBinary) this.emit('binary', toBuffer(data));
      else this.emit('text', toBuffer(data).toString('utf8'));
    });
    ws.once('close', (code, reason) => {
      this.#closed = true;
      this.emit('close', code, reason.toString());
    });
    ws.on('error', () => {}); // 'close' follows and says enough
  }

  get closed(): boolean {
    return this.#closed || this.ws.readyState !== WebSocket.OPEN;
  }

  /** Bytes accepted but not yet written. */
  get pending(): number {
    return this.#pending;
  }

  #send(data: Buffer | string, binary: boolean): boolean {
    if (this.closed) return false;
    const size = typeof data === 'string' ? Buffer.byteLength(data) : data.length;
    this.#pending += size;
    this.ws.send(data, { binary }, () => {
      const above = this.#pending > this.lowWaterMark;
      this.#pending -= size;
      if (above && this.#pending <= this.lowWaterMark) this.emit('drain');
      if (this.#pending === 0) this.emit('idle');
    });
    return this.#pending <= this.highWaterMark;
  }

  sendBinary(data: Buffer): boolean {
    return this.#send(data, true);
  }

  sendJson(message: unknown): boolean {
    return this.#send(JSON.stringify(message), false);
  }

  /** Stops reading the peer's frames (they wait in the kernel and, beyond, at the peer). */
  pause(): void {
    if (!this.ws.isPaused && this.ws.readyState === WebSocket.OPEN) this.ws.pause();
  }

  resume(): void {
    if (this.ws.isPaused) this.ws.resume();
  }

  /** Resolves once everything sent so far has been written out (or the channel closed). */
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

  close(code: number, reason: string): void {
    if (this.ws.readyState === WebSocket.CLOSING || this.ws.readyState === WebSocket.CLOSED) return;
    this.resume();
    this.ws.close(code, reason.slice(0, 120));
    const timer = setTimeout(() => this.ws.terminate(), 5000);
    timer.unref();
    this.ws.once('close', () => clearTimeout(timer));
  }

  /** A Writable whose chunks go out as binary frames, honouring the channel's backpressure. */
  binaryWritable(): Writable {
    return new Writable({
      highWaterMark: 64 * 1024,
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
