/**
 * @module Reads a hop's socket into buffers the relay reuses, instead of the fresh buffer Node
 * allocates outside the V8 heap for every read. Those fresh buffers are freed only by a
 * collection, and a relay allocates so few JavaScript objects that V8 collects only when 32 MiB
 * of them have piled up (its external-memory rule): every 1 GiB copy grew the server by the dead
 * buffers of the moment (BENCHMARKS.md, issue 35). Reused buffers leave nothing to collect.
 *
 * How: Node reads into a caller's buffer only for a socket created with the `onread` option
 * (`new net.Socket({ onread })`), and the HTTP server creates the sockets it accepts. So the
 * socket an upgrade hands over gives its connection (its `_handle`: Node's TCP handle, not part of
 * the documented API) to a new `net.Socket` made with `onread`, before anything else reads or
 * writes it. That works for a plain TCP socket of the Node we run (checked by
 * test/unit/relay/read-buffers.test.ts); anything else (TLS, a socket with bytes buffered, a
 * Node without the handle) keeps Node's own reads, which work the same, only with more garbage.
 *
 * A buffer read into is still referenced by the writes it was passed to (the payload slices go
 * to the other socket, corked until the end of the turn, queued while the kernel is full), so it
 * is reused only once the destination has written everything it was handed (its
 * `writableLength` back at 0). A socket that reads little (a shell's keystrokes) reads into small
 * buffers, so an idle stream holds 4 KiB, not 64; one whose reads fill their buffer reads into
 * large ones. The free lists are shared by every hop and bounded; buffers beyond them are left to
 * the collector.
 */
import { Socket } from 'node:net';
import type { Duplex } from 'node:stream';

const LARGE = 64 * 1024;
const SMALL = 4 * 1024;
/** Free buffers of each size kept for the next reads: 4 MiB of large ones, 256 KiB of small ones. */
const KEEP = 64;

const free = { large: [] as Buffer[], small: [] as Buffer[] };

function take(large: boolean): Buffer {
  const buf = (large ? free.large : free.small).pop();
  return buf ?? Buffer.allocUnsafeSlow(large ? LARGE : SMALL);
}

function give(buf: Buffer): void {
  const list = buf.length === LARGE ? free.large : free.small;
  if (list.length < KEEP) list.push(buf);
}

export interface HopReader {
  /** The socket the hop uses from now on (the same one when reads are not pooled). */
  socket: Duplex;
  /** Whether reads go to reused buffers (false: Node's own reads). */
  pooled: boolean;
}

interface NodeSocketInternals {
  _handle?: { useUserBuffer?: unknown } | null;
}

/**
 * Reads `upgraded` (paused: the caller resumes it) and hands each chunk read to `on.chunk`, which
 * may pass slices of it to writes; `on.settled` says whether everything passed on has been written
 * (then earlier buffers are free). Call once the upgrade's answer is written and before anything
 * reads the socket; the returned socket (with `on.error` as its `'error'` listener) replaces it.
 */
export function readIntoReusedBuffers(upgraded: Duplex, on: { chunk(chunk: Buffer): void; settled(): boolean; error(err: Error): void }): HopReader {
  const handle = adoptable(upgraded);
  if (!handle) {
    upgraded.on('data', on.chunk);
    return { socket: upgraded, pooled: false };
  }
  /** Buffers read into and perhaps still referenced by writes not yet done. */
  let inFlight: Buffer[] = [];
  let current = take(false);
  const socket = new Socket({
    handle,
    allowHalfOpen: (upgraded as Socket).allowHalfOpen,
    onread: {
      buffer: () => current,
      callback(bytes: number, buf: Uint8Array) {
        if (inFlight.length > 0 && on.settled()) {
          for (const old of inFlight) give(old);
          inFlight = [];
        }
        on.chunk((buf as Buffer).subarray(0, bytes));
        inFlight.push(current);
        // Large buffers while reads fill them (a copy), small ones once they bring little.
        current = take(bytes === current.length || (current.length === LARGE && bytes > SMALL));
        return true;
      },
    },
  } as ConstructorParameters<typeof Socket>[0] & { handle: unknown });
  socket.on('error', on.error);
  socket.pause();
  // The old socket lets go of the connection: destroying it now closes nothing but itself (and
  // tells its server that one connection less is open).
  (upgraded as NodeSocketInternals)._handle = null;
  upgraded.destroy();
  return { socket, pooled: true };
}

/** The TCP handle of a plain, fresh upgraded socket, or undefined when its reads are left to Node. */
function adoptable(socket: Duplex): object | undefined {
  if (!(socket instanceof Socket) || socket.constructor !== Socket) return undefined;
  if (socket.destroyed || socket.readableLength > 0 || socket.writableLength > 0) return undefined;
  const handle = (socket as NodeSocketInternals)._handle;
  if (!handle || typeof handle.useUserBuffer !== 'function') return undefined;
  return handle;
}
