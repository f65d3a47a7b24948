/**
 * @module A streaming WebSocket frame forwarder for one direction of the relay's splice: frames
 * are read as they arrive (`shared/websocket/frames/reader.ts`) and passed to the other socket as their
 * payload slices, with only the header rewritten for the relay's own hop — no reassembly, no
 * payload copy. The relay is the server of both hops (clients and agents dial it), so it
 * receives masked frames and sends unmasked ones (§5.1); control frames are handed over whole,
 * for the caller to answer on this hop.
 */
import { createFrameReader, type ControlFrame } from '../shared/websocket/frames/reader';
import { encodeUnmaskedHeader, type FrameErrorKind } from '../shared/websocket/frames/wire';

export type { ControlFrame } from '../shared/websocket/frames/reader';
export { FRAME_ERRORS, OPCODE, type ControlOpcode, type FrameErrorKind } from '../shared/websocket/frames/wire';

export interface FrameForwarderOptions {
  /** Whether the peer must mask its frames (§5.1: true when the peer is the client of this hop). */
  expectMasked: boolean;
  /** Largest message, summed over its fragments (1009 above it); `Infinity` for none. */
  maxPayload: number;
  /** Bytes to write to the other socket, in order: rewritten headers and payload slices. */
  onData(chunk: Buffer): void;
  /** A ping, pong or close frame of this hop, whole. After a close nothing more is read. */
  onControl(frame: ControlFrame): void;
  /** The peer broke the framing rules; close this hop with `code`. Nothing more is read. */
  onProtocolError(code: number, reason: string, kind: FrameErrorKind): void;
  /** Data payload bytes forwarded, for byte counters. */
  onPayloadBytes(bytes: number): void;
  /** A data frame's header, after its rewritten form went to `onData` (for a tap: recordings). */
  onFrame?(fin: boolean, opcode: number, length: number): void;
  /** A data frame's payload slice, after it went to `onData`. */
  onPayload?(slice: Buffer): void;
}

export interface FrameForwarder {
  /** Feeds bytes read from the socket. Masked payloads in `chunk` are unmasked in place. */
  push(chunk: Buffer): void;
  stop(): void;
  /** True after a close frame or a protocol error: further bytes are ignored. */
  readonly stopped: boolean;
  /**
   * True while a data frame's header has been passed on but not all its payload: the other
   * socket must not get a frame of its own (a pong, a close) until this turns false.
   */
  readonly midFrame: boolean;
}

export function createFrameForwarder(options: FrameForwarderOptions): FrameForwarder {
  return createFrameReader({
    expectMasked: options.expectMasked,
    maxPayload: options.maxPayload,
    onFrame(fin, opcode, length) {
      options.onData(encodeUnmaskedHeader(fin, opcode, length));
      options.onFrame?.(fin, opcode, length);
    },
    onPayload(slice) {
      options.onData(slice);
      options.onPayloadBytes(slice.length);
      options.onPayload?.(slice);
    },
    onControl: options.onControl,
    onProtocolError: options.onProtocolError,
  });
}
