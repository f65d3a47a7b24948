/**
 * @module `GET /v1/events` (server-sent events) and `POST /v1/events/tickets`. A browser's
 * EventSource cannot send an Authorization header, so besides a bearer token the stream takes a
 * one-time ticket (30 s, single use) that a bearer token asked for; a ticket in a URL is worth
 * nothing once used. The stream carries the events the caller may see, a comment every 15 s so
 * proxies keep it open, and ends when its token stops being valid: at once when it is revoked
 * (or its user disabled or deleted), at the next beat when it expires.
 */
import { randomBytes } from 'node:crypto';
import { PassThrough } from 'node:stream';
import Router from '@koa/router';
import { z } from 'zod';
import { bearerToken } from '../../shared/bearer';
import { requireAccess } from '../access';
import { unauthorized } from '../errors';
import type { PrincipalResolver } from '../http/auth';
import { principalOf } from '../http/auth';
import { ok } from '../http/envelope';
import { parseQuery } from '../http/validate';
import type { Principal } from '../store/tokens';
import { maySee, type EventHub, type TetherEvent } from './hub';

const TICKET_MS = 30_000;
const BEAT_MS = 15_000;

export const streamQuery = z.strictObject({ ticket: z.string().min(1).max(100).optional() });

export function eventRoutes(deps: { hub: EventHub; tokens: PrincipalResolver; now: () => number }) {
  const { hub, tokens, now } = deps;
  /** Tickets not yet used: the raw token they stand for, and when they stop working. */
  const tickets = new Map<string, { token: string; expires: number }>();
  /** The open streams of each token, ended at once when it is revoked. */
  const byToken = new Map<string, Set<() => void>>();

  /** Routes that need no Authorization header: the stream authenticates itself. */
  const open = new Router();
  open.get('/v1/events', function streamEvents(ctx) {
    const { ticket } = parseQuery(ctx, streamQuery);
    let token = bearerToken(ctx.get('authorization') || undefined);
    if (!token && ticket !== undefined) {
      const held = tickets.get(ticket);
      tickets.delete(ticket); // single use, valid or not
      if (held && held.expires > now()) token = held.token;
    }
    if (!token) throw unauthorized('a bearer token or an unused events ticket (POST /v1/events/tickets) is required');
    let principal: Principal | undefined = tokens.resolve(token, now());
    if (!principal) throw unauthorized('token is unknown, expired or revoked, or the ticket was used or expired');
    requireAccess(principal, 'devices:read', 'developer');

    const body = new PassThrough();
    const send = (e: TetherEvent) => {
      if (principal && maySee(principal, e)) body.write(`event: ${e.event}\ndata: ${JSON.stringify(e.data)}\n\n`);
    };
    const unsubscribe = hub.subscribe(send);
    const beat = setInterval(() => {
      principal = tokens.resolve(token, now());
      if (!principal) return void body.end('event: end\ndata: {"reason":"the token is no longer valid"}\n\n');
      body.write(': beat\n\n');
    }, BEAT_MS);
    const tokenId = principal.token_id;
    const endNow = () => void body.end('event: end\ndata: {"reason":"the token was revoked"}\n\n');
    const streams = byToken.get(tokenId) ?? new Set();
    byToken.set(tokenId, streams.add(endNow));
    const stop = () => {
      clearInterval(beat);
      unsubscribe();
      streams.delete(endNow);
      if (streams.size === 0) byToken.delete(tokenId);
    };
    body.on('close', stop);
    ctx.req.on('close', () => body.destroy());
    ctx.req.socket.setTimeout(0);
    ctx.set('Cache-Control', 'no-store');
    ctx.set('X-Accel-Buffering', 'no');
    ctx.type = 'text/event-stream';
    ctx.body = body;
    body.write('retry: 3000\n: connected\n\n');
  });

  const authed = new Router();
  authed.post('/v1/events/tickets', function issueEventsTicket(ctx) {
    const principal = principalOf(ctx);
    requireAccess(principal, 'devices:read', 'developer');
    const t = now();
    for (const [key, held] of tickets) if (held.expires <= t) tickets.delete(key);
    const ticket = randomBytes(24).toString('base64url');
    const token = bearerToken(ctx.get('authorization') || undefined)!;
    tickets.set(ticket, { token, expires: t + TICKET_MS });
    ok(ctx, { ticket, expires_at: new Date(t + TICKET_MS).toISOString() }, 201);
  });

  return {
    open,
    authed,
    /** A token was revoked (or its user cut off): its streams end now, not at the next beat. */
    tokenRevoked(tokenId: string): void {
      for (const end of [...(byToken.get(tokenId) ?? [])]) end();
    },
  };
}
