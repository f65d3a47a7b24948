/**
 * @module Splices two WebSockets: every frame read from one is sent unchanged (binary stays
 * binary, text stays text) on the other, with backpressure (ws `lib/stream.js`, chisel
 * `share/cio/pipe.go`). A direction whose destination has more than `highWaterMark` bytes not
 * yet written to the kernel pauses its source until it falls below `lowWaterMark`, so memory
 * stays bounded by the marks whatever the peers do. Ends exactly once.
 */
import type { RawData, WebSocket } from 'ws';
import { closeOnce } from '../shared/ws-close';

export interface SpliceOptions {
  highWaterMark: number;
  lowWaterMark: number;
  /** Payload bytes forwarded from `a` to `b` (`aToB`) or back. */
  onBytes(direction: 'aToB' | 'bToA', bytes: number): void;
  /**
   * One side closed (or failed) first; returns the code and reason to close the other side
   * with. Called once.
   */
  onEnd(closedSide: 'a' | 'b', code: number, reason: string): { code: number; reason: string };
}

export interface Splice {
  /** Closes both sides (a with `codeA`, b with `codeB`), unless already ended. */
  end(codeA: number, reasonA: string, codeB: number, reasonB: string): void;
  readonly ended: boolean;
  /** Bytes accepted for sending but not yet written, per direction (for tests and metrics). */
  pending(): { aToB: number; bToA: number };
}

const frameSize = (data: RawData): number =>
  Array.isArray(data) ? data.reduce((n, b) => n + b.length, 0) : (data as Buffer | ArrayBuffer).byteLength;


export function splice(a: WebSocket, b: WebSocket, options: SpliceOptions): Splice {
  let ended = false;
  const pending = { aToB: 0, bToA: 0 };

  function pipe(src: WebSocket, dst: WebSocket, direction: 'aToB' | 'bToA'): void {
    src.on('message', function forward(data: RawData, isBinary: boolean) {
      if (ended) return;
      const size = frameSize(data);
      options.onBytes(direction, size);
      pending[direction] += size;
      if (pending[direction] > options.highWaterMark && !src.isPaused) src.pause();
      dst.send(data, { binary: isBinary }, function sent() {
        pending[direction] -= size;
        if (src.isPaused && pending[direction] <= options.lowWaterMark && !ended) src.resume();
      });
    });
  }

  function finish(closed: 'a' | 'b', code: number, reason: string): void {
    if (ended) return;
    ended = true;
    const other = closed === 'a' ? b : a;
    const next = options.onEnd(closed, code, reason);
    closeOnce(other, next.code, next.reason);
  }

  pipe(a, b, 'aToB');
  pipe(b, a, 'bToA');
  a.once('close', (code, reason) => finish('a', code, reason.toString()));
  b.once('close', (code, reason) => finish('b', code, reason.toString()));
  // Frames held while the other side was joining flow once both are spliced.
  if (a.isPaused) a.resume();
  if (b.isPaused) b.resume();

  return {
    end(codeA, reasonA, codeB, reasonB) {
      if (ended) return;
      ended = true;
      closeOnce(a, codeA, reasonA);
      closeOnce(b, codeB, reasonB);
    },
    get ended() {
      return ended;
    },
    pending: () => ({ ...pending }),
  };
}
