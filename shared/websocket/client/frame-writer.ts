/**
 * @module The frames a WebSocket client writes (RFC 6455 §5.2–§5.3): masked with a zero key where
 * masking protects nothing (`shared/websocket/mask.ts`), sent then without copying the payload (small
 * frames joined with their header into one buffer, large ones as two writes in one writev); with
 * a random key elsewhere, masked in a copy.
 */
import { randomFillSync } from 'node:crypto';
import type { Socket } from 'node:net';
import { encodeMaskedHeader, unmaskInPlace } from '../frames/wire';

/** Below this a frame's header and payload go out as one buffer; above, as two writes in one writev. */
const MERGE_BELOW = 16 * 1024;
const ZERO_KEY = Buffer.alloc(4);

/** Writes one whole frame of `parts`; `callback` runs once it is written to the kernel. */
export function writeFrame(socket: Socket, zeroMask: boolean, opcode: number, parts: readonly Buffer[], callback?: (err?: Error) => void): void {
  const key = zeroMask ? ZERO_KEY : randomFillSync(Buffer.allocUnsafe(4));
  let length = 0;
  for (const part of parts) length += part.length;
  const header = encodeMaskedHeader(true, opcode, length, key);
  const cb = callback ? (err?: Error | null) => callback(err ?? undefined) : undefined;
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
