/**
 * @module What a hop (`relay/hop.ts`) is to the rest of the relay: where the frames it reads go,
 * and what the splice and the streams may do with it.
 */
import type { Duplex } from 'node:stream';
import type { FrameTap } from '../../shared/relay/recording';

/** Where the data frames a hop reads go (the splice's other side). */
export interface HopSink {
  /** Before the frames of one read are passed on (to cork the other socket). */
  begin(): void;
  /** Bytes to pass on, in order: rewritten headers and payload slices. */
  data(chunk: Buffer): void;
  /** Payload bytes passed on, for byte counters. */
  payloadBytes(bytes: number): void;
  /** After the frames of one read have been passed on. */
  end(): void;
  /** Whether every byte passed to `data` has been written to the kernel (the read buffers they came from are free again). */
  settled(): boolean;
  /** A tap on the data frames passed on (a recording): each header, then its payload slices. */
  tap?: FrameTap | undefined;
}

export interface HopOptions {
  /** Largest message, summed over its fragments (1009 above it). */
  maxPayload: number;
  /** How long a closing peer may take to answer the close frame before the connection is cut. */
  closeGraceMs?: number;
  onSocketError(err: Error): void;
}

export type HopState = 'open' | 'closing' | 'closed';

/** The hop whose frames another hop writes. */
export interface FrameSource {
  readonly readingMidFrame: boolean;
  readonly state: HopState;
}

export interface Hop {
  readonly socket: Duplex;
  readonly state: HopState;
  readonly isPaused: boolean;
  pause(): void;
  resume(): void;
  /** Sends the data frames this hop reads to `sink`; without one (and once closing) they are dropped. */
  pipeTo(sink: HopSink): void;
  /** True while a data frame this hop reads has been passed on only in part. */
  readonly readingMidFrame: boolean;
  /**
   * Names the hop whose frames are written on this one: while it is `readingMidFrame`, this
   * hop's own control frames (a pong, a close) wait for the frame's end.
   */
  writtenFrom(source: FrameSource): void;
  /** Writes bytes of the other side's frames; returns false when the socket's buffer is full. */
  write(chunk: Buffer): boolean;
  /** Sends the pong or close that waited for a frame's end, if it has ended (or cuts the connection if it never will). */
  flushControl(): void;
  /**
   * Sends a whole text frame of the relay's own (a notice): at once, or at the end of the frame
   * being written on this hop (only the latest waits). Dropped once the hop is closing.
   */
  sendText(text: string): void;
  /** Starts the close handshake with `code` (its reason cut to fit), or cuts the connection when a frame is unfinished. */
  close(code: number, reason: string): void;
  /** Cuts the connection. */
  terminate(): void;
  /**
   * `listener` learns once why the hop stopped carrying frames: the peer's close code and reason
   * (1005 for none), a protocol error's code (1002, 1007, 1009), the code of our own close,
   * or 1006 when the connection was lost.
   */
  onClose(listener: (code: number, reason: string) => void): void;
  /** Resolves once the socket is closed. */
  readonly done: Promise<void>;
}
