/** @module Refuses a WebSocket upgrade with a plain HTTP response and a JSON error body. */
import type { Duplex } from 'node:stream';
import { STATUS_CODES } from 'node:http';

export function rejectUpgrade(socket: Duplex, status: number, error: string, message: string): void {
  const body = JSON.stringify({ error, message, status });
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\n` +
      'Content-Type: application/json\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      'Connection: close\r\n\r\n' +
      body,
  );
  // Flushed to the kernel: nothing more to say, do not wait for the peer to hang up.
  socket.once('finish', () => socket.destroy());
}
