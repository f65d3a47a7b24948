/**
 * @module Splices two hops (`./hop`): the frames read from one are passed to the other as they
 * arrive, payload bytes untouched and only the header rewritten for the outgoing hop
 * (`./frame-relay`), so no frame is ever held whole. Binary stays binary, text stays text,
 * fragments stay fragments. Backpressure as in Node's `pipe` and chisel's `share/cio/pipe.go`: a
 * direction whose destination holds more than `highWaterMark` bytes not yet written to the kernel
 * stops reading its source until the destination drains, so memory stays bounded by the mark
 * whatever the peers do. Ends exactly once.
 */
import type { FrameTap } from '../shared/relay/recording';
import type { Hop } from './hop';

export interface SpliceOptions {
  highWaterMark: number;
  /** Payload bytes forwarded from `a` to `b` (`aToB`) or back. */
  onBytes(direction: 'aToB' | 'bToA', bytes: number): void;
  /**
   * One side closed (or failed) first; returns the code and reason to close the other side
   * with. Called once.
   */
  onEnd(closedSide: 'a' | 'b', code: number, reason: string): { code: number; reason: string };
  /** Sees the data frames going one way as they pass (a recording); never holds them up. */
  taps?: { aToB?: FrameTap | undefined; bToA?: FrameTap | undefined } | undefined;
}

export interface Splice {
  /** Closes both sides (a with `codeA`, b with `codeB`), unless already ended. */
  end(codeA: number, reasonA: string, codeB: number, reasonB: string): void;
  readonly ended: boolean;
  /** Bytes accepted for sending but not yet written, per direction (for tests and metrics). */
  pending(): { aToB: number; bToA: number };
}

export function splice(a: Hop, b: Hop, options: SpliceOptions): Splice {
  let ended = false;

  function pipe(src: Hop, dst: Hop, direction: 'aToB' | 'bToA'): void {
    const out = dst.socket;
    dst.writtenFrom(src);
    // libuv reads a busy socket several times (64 KiB each) in one turn of the event loop: what
    // they bring leaves in one writev after them, not one write (and one wake-up of the reader
    // on the other side) per read. setImmediate runs right after those reads, so a keystroke
    // waits microseconds.
    let corked = false;
    const uncork = () => {
      corked = false;
      out.uncork();
    };
    src.pipeTo({
      begin() {
        if (corked) return;
        corked = true;
        out.cork();
        setImmediate(uncork);
      },
      data: (chunk) => dst.write(chunk),
      settled: () => out.writableLength === 0,
      // Bytes the other side can no longer take (it is gone) were not relayed, and are not counted.
      payloadBytes: (bytes) => dst.state === 'open' && options.onBytes(direction, bytes),
      tap: options.taps?.[direction],
      end() {
        dst.flushControl();
        if (!ended && out.writableLength > options.highWaterMark) src.pause();
      },
    });
    out.on('drain', function resumeSource() {
      if (!ended && src.state === 'open' && src.isPaused) src.resume();
    });
    // A close waiting on dst for src's frame to end must not wait for a source that is gone.
    void src.done.then(() => dst.flushControl());
  }

  function finish(closed: 'a' | 'b', code: number, reason: string): void {
    if (ended) return;
    ended = true;
    const next = options.onEnd(closed, code, reason);
    (closed === 'a' ? b : a).close(next.code, next.reason);
  }

  pipe(a, b, 'aToB');
  pipe(b, a, 'bToA');
  a.onClose((code, reason) => finish('a', code, reason));
  b.onClose((code, reason) => finish('b', code, reason));
  // Frames held while the other side was joining flow once both are spliced.
  a.resume();
  b.resume();

  return {
    end(codeA, reasonA, codeB, reasonB) {
      if (ended) return;
      ended = true;
      a.close(codeA, reasonA);
      b.close(codeB, reasonB);
    },
    get ended() {
      return ended;
    },
    pending: () => ({ aToB: b.socket.writableLength, bToA: a.socket.writableLength }),
  };
}
