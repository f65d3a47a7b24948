/**
 * @module A streaming WebSocket frame reader (RFC 6455 §5.2): it reads frame headers off a
 * socket's bytes as they arrive (a header may be split anywhere) and hands data-frame payloads on
 * as slices of the chunks it was given — no reassembly, no payload copy. Both the relay's splice
 * (`relay/frame-relay.ts`) and our own clients' session streams (`shared/websocket/client.ts`) read
 * frames with it.
 *
 * Masking (§5.1, §5.3): the side that expects masked frames removes a non-zero key in place (the
 * caller's chunks are mutated); an all-zero key (our agent and CLI on loopback/TLS, see
 * `shared/websocket/mask.ts`) leaves the bytes untouched. Fragmentation (§5.4) and control frames (§5.5)
 * are checked; control frames are handed over whole. Text is not validated as UTF-8 here: whoever
 * reads the text validates it. Extensions are not supported (permessage-deflate is never
 * negotiated), so RSV bits must be 0.
 */
import { FRAME_ERRORS, MAX_CONTROL_PAYLOAD, OPCODE, isControlOpcode, isDataOpcode, unmaskInPlace, type ControlOpcode, type FrameErrorKind } from './wire';

export interface ControlFrame {
  opcode: ControlOpcode;
  /** Unmasked, at most 125 bytes. */
  payload: Buffer;
}

export interface FrameReaderOptions {
  /** Whether the peer must mask its frames (§5.1: true when the peer is the client). */
  expectMasked: boolean;
  /** Largest message, summed over its fragments (1009 above it); `Infinity` for none. */
  maxPayload: number;
  /** A data frame's header (its payload follows through `onPayload`, perhaps in pieces). */
  onFrame(fin: boolean, opcode: number, length: number): void;
  /** Payload bytes of the data frame announced last, unmasked, in order. */
  onPayload(slice: Buffer): void;
  /** A ping, pong or close frame, whole. After a close nothing more is read. */
  onControl(frame: ControlFrame): void;
  /** The peer broke the framing rules; close with `code`. Nothing more is read. */
  onProtocolError(code: number, reason: string, kind: FrameErrorKind): void;
}

export interface FrameReader {
  /** Feeds bytes read from the socket. Masked payloads in `chunk` are unmasked in place. */
  push(chunk: Buffer): void;
  /** True after a close frame, a protocol error or `stop()`: further bytes are ignored. */
  readonly stopped: boolean;
  /** Reads nothing more, from the rest of the chunk being read on (a problem found above the framing). */
  stop(): void;
  /** True while a data frame's header has been handed on but not all its payload. */
  readonly midFrame: boolean;
}

/** The longest header: 2 bytes, 8 of extended length, 4 of masking key (§5.2). */
const MAX_HEADER = 14;

export function createFrameReader(options: FrameReaderOptions): FrameReader {
  const head = Buffer.alloc(MAX_HEADER);
  let headLength = 0;
  /** Header bytes needed: 2 until those are read, then the full header size. */
  let headNeeded = 2;
  let inPayload = false;
  let stopped = false;

  // The frame being read.
  let fin = false;
  let opcode = 0;
  let payloadLeft = 0;
  let key: Buffer | undefined;
  let keyOffset = 0;
  let control: Buffer | undefined;
  let controlLength = 0;

  // The message being read (§5.4).
  let inMessage = false;
  let messageBytes = 0;

  function fail(kind: FrameErrorKind): void {
    stopped = true;
    const { code, reason } = FRAME_ERRORS[kind];
    options.onProtocolError(code, reason, kind);
  }

  /** Checks the first two header bytes; returns the full header size, or 0 after an error. */
  function readFirstTwo(): number {
    const b0 = head[0];
    const b1 = head[1];
    fin = (b0 & 0x80) !== 0;
    opcode = b0 & 0x0f;
    const masked = (b1 & 0x80) !== 0;
    const length7 = b1 & 0x7f;
    if ((b0 & 0x70) !== 0) return failed('RSV_SET');
    if (!isDataOpcode(opcode) && !isControlOpcode(opcode)) return failed('BAD_OPCODE');
    if (masked !== options.expectMasked) return failed(masked ? 'MASK_FORBIDDEN' : 'MASK_REQUIRED');
    if (isControlOpcode(opcode)) {
      if (!fin) return failed('CONTROL_FRAGMENTED');
      if (length7 > MAX_CONTROL_PAYLOAD) return failed('CONTROL_TOO_LONG');
    }
    const extended = length7 === 126 ? 2 : length7 === 127 ? 8 : 0;
    return 2 + extended + (masked ? 4 : 0);
  }

  function failed(kind: FrameErrorKind): number {
    fail(kind);
    return 0;
  }

  function payloadLength(): number | undefined {
    const length7 = head[1] & 0x7f;
    if (length7 < 126) return length7;
    if (length7 === 126) return head.readUInt16BE(2);
    const high = head.readUInt32BE(2);
    if (high & 0x80000000) return void fail('LENGTH_MSB_SET');
    // Past 2^53 - 1 a number loses precision; no limit allows that much anyway.
    if (high > 0x1fffff) return void fail('TOO_BIG');
    return high * 2 ** 32 + head.readUInt32BE(6);
  }

  /** The header is complete: checks the frame against the message state and starts its payload. */
  function startFrame(): void {
    const length = payloadLength();
    if (length === undefined) return;
    const masked = (head[1] & 0x80) !== 0;
    key = masked && head.readUInt32BE(headNeeded - 4) !== 0 ? head.subarray(headNeeded - 4, headNeeded) : undefined;
    keyOffset = 0;
    payloadLeft = length;
    if (isControlOpcode(opcode)) {
      if (opcode === OPCODE.close && length === 1) return fail('BAD_CLOSE_PAYLOAD');
      control = Buffer.allocUnsafe(length);
      controlLength = 0;
    } else {
      if (opcode === OPCODE.continuation && !inMessage) return fail('UNEXPECTED_CONTINUATION');
      if (opcode !== OPCODE.continuation && inMessage) return fail('UNFINISHED_MESSAGE');
      messageBytes = (opcode === OPCODE.continuation ? messageBytes : 0) + length;
      if (messageBytes > options.maxPayload) return fail('TOO_BIG');
      inMessage = !fin;
      control = undefined;
      options.onFrame(fin, opcode, length);
    }
    inPayload = true;
    if (payloadLeft === 0) endFrame();
  }

  function endFrame(): void {
    inPayload = false;
    headLength = 0;
    headNeeded = 2;
    if (control === undefined) return;
    const frame: ControlFrame = { opcode: opcode as ControlOpcode, payload: control };
    control = undefined;
    if (frame.opcode === OPCODE.close) stopped = true;
    options.onControl(frame);
  }

  /** Reads header bytes from `chunk` at `pos`; returns the new position. */
  function readHeader(chunk: Buffer, pos: number): number {
    const take = Math.min(headNeeded - headLength, chunk.length - pos);
    chunk.copy(head, headLength, pos, pos + take);
    headLength += take;
    if (headLength === 2 && headNeeded === 2) {
      headNeeded = readFirstTwo();
      if (stopped) return chunk.length;
    }
    if (headLength === headNeeded) startFrame();
    return pos + take;
  }

  /** Hands on (or collects, for a control frame) payload bytes from `chunk` at `pos`. */
  function readPayload(chunk: Buffer, pos: number): number {
    const take = Math.min(payloadLeft, chunk.length - pos);
    const slice = chunk.subarray(pos, pos + take);
    if (key !== undefined) unmaskInPlace(slice, key, keyOffset);
    keyOffset += take;
    payloadLeft -= take;
    if (control !== undefined) {
      slice.copy(control, controlLength);
      controlLength += take;
    } else {
      options.onPayload(slice);
    }
    if (payloadLeft === 0) endFrame();
    return pos + take;
  }

  return {
    push(chunk: Buffer): void {
      let pos = 0;
      while (pos < chunk.length && !stopped) {
        pos = inPayload ? readPayload(chunk, pos) : readHeader(chunk, pos);
      }
    },
    get stopped() {
      return stopped;
    },
    stop() {
      stopped = true;
    },
    get midFrame() {
      return inPayload && control === undefined;
    },
  };
}
