/**
 * @module Close frames the same way on every side (relay, agent, client): a code and a reason
 * cut to fit (RFC 6455 §5.5.1), which codes may be passed on to a peer, and a peer's close frame
 * read and checked.
 */
import { isUtf8 } from 'node:buffer';

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

/** Close codes a peer may send (RFC 6455 §7.4; ws `isValidStatusCode`). */
const validPeerCode = (code: number): boolean =>
  (code >= 1000 && code <= 1014 && code !== 1004 && code !== 1005 && code !== 1006) || (code >= 3000 && code <= 4999);

/**
 * A peer's close frame: its code (1005 when it has none) and reason, or the protocol error it
 * commits: a code a peer may not send (1002), a reason that is not UTF-8 (1007).
 */
export function readClosePayload(payload: Buffer): { ok: true; code: number; reason: string } | { ok: false; code: 1002 | 1007; reason: string } {
  const code = payload.length >= 2 ? payload.readUInt16BE(0) : 1005;
  if (payload.length >= 2 && !validPeerCode(code)) return { ok: false, code: 1002, reason: 'invalid close code' };
  if (payload.length > 2 && !isUtf8(payload.subarray(2))) return { ok: false, code: 1007, reason: 'close reason is not UTF-8' };
  return { ok: true, code, reason: payload.subarray(2).toString() };
}
