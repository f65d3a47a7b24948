/**
 * @module Stream tickets: `<token id>.<HMAC-SHA256(server secret, session id, token id)>`, so a
 * ticket is bound to one session and to the token it was shown to, can be shown again in
 * `websocket_url` without being stored, and is checked in constant time. The token id travels in
 * the clear so the checker can tell who joins; whether that token may still join, and whether the
 * session is still open, is the checker's business. A node that must not pass the ticket itself on
 * (a cluster's edge) passes its digest, `<token id>.<SHA-256 hex of the ticket>`, which checks the same.
 */
import { createHmac } from 'node:crypto';
import { safeEqual, sha256Hex } from '../ids';

/** A token id as the API makes them (`tok_` + base32); nothing else is looked up. */
const TOKEN_ID = /^[A-Za-z0-9_-]{1,64}$/;

export interface Ticketer {
  /** The ticket of `sessionId` for the holder of token `tokenId`. */
  issue(sessionId: string, tokenId: string): string;
  /** The id of the token the ticket was issued to when it is a ticket of this session; else undefined. */
  verify(sessionId: string, ticket: string): string | undefined;
  /** The same for a ticket's `ticketDigest`. */
  verifyDigest(sessionId: string, digest: string): string | undefined;
}

/** The token id a ticket (or its digest) names, and the rest; undefined when it names none. */
function split(text: string): { tokenId: string; rest: string } | undefined {
  const dot = text.lastIndexOf('.');
  const tokenId = text.slice(0, dot);
  return dot > 0 && TOKEN_ID.test(tokenId) ? { tokenId, rest: text.slice(dot + 1) } : undefined;
}

/** What a node passes on instead of a ticket: the token id it names and the ticket's SHA-256. */
export function ticketDigest(ticket: string): string {
  const parts = split(ticket);
  return parts ? `${parts.tokenId}.${sha256Hex(ticket)}` : sha256Hex(ticket);
}

export function createTicketer(secret: Buffer): Ticketer {
  const mac = (sessionId: string, tokenId: string) =>
    createHmac('sha256', secret).update(`tether-stream-ticket:v2:${sessionId}\n${tokenId}`).digest('base64url');
  const issue = (sessionId: string, tokenId: string) => `${tokenId}.${mac(sessionId, tokenId)}`;
  return {
    issue,
    verify(sessionId, ticket) {
      const parts = split(ticket);
      return parts && safeEqual(mac(sessionId, parts.tokenId), parts.rest) ? parts.tokenId : undefined;
    },
    verifyDigest(sessionId, digest) {
      const parts = split(digest);
      return parts && safeEqual(sha256Hex(issue(sessionId, parts.tokenId)), parts.rest) ? parts.tokenId : undefined;
    },
  };
}
