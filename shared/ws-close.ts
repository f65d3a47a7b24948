/**
 * @module Close frames the same way on every side (broker, agent, client): a code and a reason
 * cut to fit (RFC 6455 §5.5.1), and which codes may be passed on to a peer.
 */

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

/** A close frame's payload: the code and the reason cut to fit; none at all for 1005 (no code). */
export function closePayload(code: number, reason: string): Buffer {
  if (code === 1005) return Buffer.alloc(0);
  const text = Buffer.from(fitCloseReason(reason));
  const payload = Buffer.allocUnsafe(2 + text.length);
  payload.writeUInt16BE(code, 0);
  text.copy(payload, 2);
  return payload;
}
