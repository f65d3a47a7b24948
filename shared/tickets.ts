/**
 * @module Stream tickets: `HMAC-SHA256(server secret, session id)`, so a ticket is bound to one
 * session, can be shown again in `websocket_url` without being stored, and is checked in
 * constant time. Whether the session is still open is the checker's business.
 */
import { createHmac } from 'node:crypto';
import { safeEqual } from './ids';

export interface Ticketer {
  issue(sessionId: string): string;
  verify(sessionId: string, ticket: string): boolean;
}

export function createTicketer(secret: Buffer): Ticketer {
  const issue = (sessionId: string) =>
    createHmac('sha256', secret).update(`tether-stream-ticket:${sessionId}`).digest('base64url');
  return {
    issue,
    verify: (sessionId, ticket) => safeEqual(issue(sessionId), ticket),
  };
}
