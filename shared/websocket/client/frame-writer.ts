/**
 * @module The frames a WebSocket client writes (RFC 6455 §5.2–§5.3): masked with a zero key where
 * masking protects nothing (`shared/websocket/mask.ts`), sent then without copying the payload (small
 * frames joined with their header into one buffer, large ones as two writes in one writev); with
 * a random key elsewhere, masked in a copy. A keystroke's frame is built in one allocation: the
 * agent's scavenges, fewer per keystroke, are what shows in the echo's tail.
 */
import { randomFillSync } from 'node:crypto';
import type { Socket } from 'node:net';
import { encodeMaskedHeader, unmaskInPlace } from '../frames/wire';

/** Below this a frame's header and payload go out as one buffer; above, as two writes in one writev. */
const MERGE_BELOW = 16 * 1024;
const ZERO_KEY = Buffer.alloc(4);
/** The longest payload a 7-bit length holds (RFC 6455 §5.2). */
const MAX_SHORT = 125;

/** A frame with a zero key and a payload of at most MAX_SHORT bytes, header and payload in one buffer. */
function shortFrame(opcode: number, parts: readonly Buffer[], length: number): Buffer {
  const frame = Buffer.allocUnsafe(6 + length);
  frame[0] = 0x80 | opcode; // FIN: the client sends every message in one frame
  frame[1] = 0x80 | length; // MASK, then the 7-bit length
  frame.writeUInt32BE(0, 2); // the zero key
  let at = 6;
  for (const part of parts) at += part.copy(frame, at);
  return frame;
}

/** Writes one whole frame of `parts`; `callback` runs once it is written to the kernel. */
export function writeFrame(socket: Socket, zeroMask: boolean, opcode: number, parts: readonly Buffer[], callback?: (err?: Error) => void): void {
  let length = 0;
  for (const part of parts) length += part.length;
  const cb = callback ? (err?: Error | null) => callback(err ?? undefined) : undefined;
  if (zeroMask && length <= MAX_SHORT) return void socket.write(shortFrame(opcode, parts, length), cb);
  const key = zeroMask ? ZERO_KEY : randomFillSync(Buffer.allocUnsafe(4));
  const header = encodeMaskedHeader(true, opcode, length, key);
  if (!zeroMask) {
    const frame = Buffer.concat([header, ...parts]);
    unmaskInPlace(frame.subarray(header.length), key, 0); // XOR is its own inverse
    socket.write(frame, cb);
  } else if (length < MERGE_BELOW) {
    socket.write(Buffer.concat([header, ...parts]), cb);
  } else {
    socket.cork();
    socket.write(header);
    parts.forEach((part, i) => socket.write(part, i === parts.length - 1 ? cb : undefined));
    socket.uncork();
  }
}
