/**
 * @module Identifiers and secrets: random ids with fixed shapes, opaque tokens and their hashes.
 * Tokens are never stored; only their SHA-256 hashes are (they carry 256 bits of entropy, so a
 * slow hash adds nothing).
 */
import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';

const BASE32 = 'abcdefghijklmnopqrstuvwxyz234567';

/** `n` random characters of lowercase RFC 4648 base32 (5 bits each). */
export function randomBase32(n: number): string {
  const bytes = randomBytes(n);
  let out = '';
  for (let i = 0; i < n; i++) out += BASE32[bytes[i]! & 31];
  return out;
}

/** `sess-` + 20 base32 characters (100 random bits). */
export const newSessionId = (): string => `sess-${randomBase32(20)}`;

/** W3C trace-context trace id: 32 lowercase hex, never all zeros. */
export function newTraceId(): string {
  for (;;) {
    const id = randomBytes(16).toString('hex');
    if (!/^0+$/.test(id)) return id;
  }
}

export const newRequestId = (): string => randomUUID();

/** An opaque bearer secret with a readable prefix naming its kind (`tth_`, `tdev_`). */
export const newSecret = (prefix: string): string => `${prefix}${randomBytes(32).toString('base64url')}`;

export const sha256Hex = (value: string): string => createHash('sha256').update(value).digest('hex');

/** Compares two strings without leaking where they differ through timing. */
export function safeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a);
  const bb = Buffer.from(b);
  if (ab.length !== bb.length) {
    timingSafeEqual(ab, ab);
    return false;
  }
  return timingSafeEqual(ab, bb);
}
