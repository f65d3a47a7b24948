/**
 * @module Ending a WebSocket exactly once, the same way on every side (broker, agent, client):
 * a close frame with a code and a reason cut to fit, and a hard stop if the peer does not answer
 * it in time. A paused socket is resumed first, or it would never read the peer's close frame.
 */
import { WebSocket } from 'ws';

/** A close frame's reason holds at most 123 bytes (RFC 6455 §5.5: 125 with the code). */
const MAX_REASON_BYTES = 123;

/**
 * `reason` cut to fit a close frame, between characters. ws throws on a longer one, and some
 * reasons come from peers (a device's refusal message, its own close reason), in any script.
 */
export function fitCloseReason(reason: string): string {
  if (Buffer.byteLength(reason) <= MAX_REASON_BYTES) return reason;
  let fitted = '';
  let bytes = 0;
  for (const char of reason) {
    bytes += Buffer.byteLength(char);
    if (bytes > MAX_REASON_BYTES) break;
    fitted += char;
  }
  return fitted;
}

/** Close codes a peer may receive; anything else (1005, 1006, …) becomes `fallback`. */
export function sendableCode(code: number, fallback: number): number {
  return code === 1000 || code === 1001 || code === 1011 || (code >= 3000 && code <= 4999) ? code : fallback;
}

/** Closes a socket politely, and for good if the peer does not answer the close in time. */
export function closeOnce(ws: WebSocket, code: number, reason: string, graceMs = 5000): void {
  if (ws.readyState === WebSocket.CLOSED || ws.readyState === WebSocket.CLOSING) return;
  if (ws.isPaused) ws.resume();
  if (ws.readyState === WebSocket.CONNECTING) {
    ws.terminate();
    return;
  }
  ws.close(code, fitCloseReason(reason));
  const timer = setTimeout(() => ws.terminate(), graceMs);
  timer.unref();
  ws.once('close', () => clearTimeout(timer));
}
