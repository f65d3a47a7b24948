/**
 * Ping floods, for the tests of peers that ping and never read: the same 64 KiB of pings written
 * again and again as fast as the peer takes them, until it stops taking them, then one last ping
 * of its own (the one a peer that reads again must get a pong for, RFC 6455 §5.5.3).
 */
import type { Socket } from 'node:net';
import { encodeFrame, OPCODE } from './raw-ws';

/** The payload of the ping written after the flood. */
export const LAST_PING = Buffer.from('the last ping');

export interface FloodOptions {
  /** Clients mask their frames, servers do not (§5.1). */
  masked: boolean;
  /** Bytes of pings to write at most. */
  bytes: number;
  /** The peer stopped reading when a write has waited this long. */
  stallMs: number;
}

export interface Flooded {
  /** Bytes of pings written (the last one not counted). */
  sent: number;
  /** True when the peer stopped taking them before `bytes` went out. */
  stalled: boolean;
}

/** Floods `socket` with pings of 125 bytes (see the module header); resolves once that ended. */
export async function floodPings(socket: Socket, options: FloodOptions): Promise<Flooded> {
  const chunk = Buffer.concat(
    Array.from({ length: 512 }, () => encodeFrame({ opcode: OPCODE.ping, masked: options.masked, payload: Buffer.alloc(125, 0x70) })),
  );
  const gone = new Promise<'gone'>((resolve) => socket.once('close', () => resolve('gone')));
  let sent = 0;
  let stalled = false;
  while (sent < options.bytes && !socket.destroyed) {
    sent += chunk.length;
    if (socket.write(chunk)) continue;
    let timer: NodeJS.Timeout | undefined;
    const outcome = await Promise.race([
      new Promise<'drained'>((resolve) => socket.once('drain', () => resolve('drained'))),
      new Promise<'stalled'>((resolve) => (timer = setTimeout(() => resolve('stalled'), options.stallMs))),
      gone,
    ]);
    clearTimeout(timer);
    if (outcome === 'stalled') stalled = true;
    if (outcome !== 'drained') break;
  }
  if (!socket.destroyed) socket.write(encodeFrame({ opcode: OPCODE.ping, masked: options.masked, payload: LAST_PING }));
  return { sent, stalled };
}
