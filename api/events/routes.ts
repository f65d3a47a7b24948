/**
 * @module `GET /v1/events` (server-sent events) and `POST /v1/events/tickets`. A browser's
 * EventSource cannot send an Authorization header, so besides a bearer token the stream takes a
 * one-time ticket (30 s, single use) that a bearer token asked for; a ticket in a URL is worth
 * nothing once used. The stream carries the events the caller may see, a comment every 15 s so
 * proxies keep it open, and ends when its token stops being valid: at once when it is revoked
 * (or its user disabled or deleted), at the next beat when it expires.
 *
 * Bounded per user and per stream: a user holds at most `EVENT_STREAMS_PER_USER` streams at once
 * (more are 429 `rate_limited`), and a client that does not read what it is sent is cut off once
 * `MAX_BUFFERED_BYTES` wait for it, rather than kept in memory without end (the rule of `ws`'s
 * `lib/stream.js`: a write that returns false means stop).
 */
import { randomBytes } from 'node:crypto';
import { PassThrough } from 'node:stream';
import Router from '@koa/router';
import { streamQuery, type EndEvent, type EventsTicket, type ServerEvent } from '../../shared/api/events';
import { bearerToken } from '../../shared/auth/bearer';
import type { Logger } from '../../shared/log';
import { requireAccess } from '../access';
import { ApiError, unauthorized } from '../errors';
import type { PrincipalResolver } from '../http/auth';
import { principalOf } from '../http/auth';
import { ok } from '../http/envelope';
import { parseQuery } from '../http/validate';
import type { Principal } from '../store/tokens';
import { maySee, type EventHub, type TetherEvent } from './hub';

/** An event as the stream writes it (`shared/api/events.ts` says what each carries). */
const sse = ({ event, data }: ServerEvent | EndEvent) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

const TICKET_MS = 30_000;
const BEAT_MS = 15_000;
/** Event streams one user may hold at once (docs/http-api.md, events); one more is 429. */
export const EVENT_STREAMS_PER_USER = 10;
/** What the 429 asks to wait: a stream is long-lived, so one is not likely to end sooner. */
const RETRY_AFTER_S = 30;
/**
 * What may wait for one slow client, in bytes (several thousand events). A client that reads
 * keeps far less waiting, even through a burst of presence changes; past it the client is cut
 * off, and an EventSource connects again (`retry:`) and reads the state afresh.
 */
export const MAX_BUFFERED_BYTES = 1024 * 1024;

export function eventRoutes(deps: { hub: EventHub; tokens: PrincipalResolver; now: () => number; log?: Logger }) {
  const { hub, tokens, now, log } = deps;
  /** Tickets not yet used: the raw token they stand for, and when they stop working. */
  const tickets = new Map<string, { token: string; expires: number }>();
  /** The open streams of each token, ended at once when it is revoked. */
  const byToken = new Map<string, Set<() => void>>();
  /** How many streams each user holds. */
  const perUser = new Map<string, number>();

  /** Routes that need no Authorization header: the stream authenticates itself. */
  const open = new Router();
  open.get('/v1/events', async function streamEvents(ctx) {
    const { ticket } = parseQuery(ctx, streamQuery);
    let token = bearerToken(ctx.get('authorization') || undefined);
    if (!token && ticket !== undefined) {
      const held = tickets.get(ticket);
      tickets.delete(ticket); // single use, valid or not
      if (held && held.expires > now()) token = held.token;
    }
    if (!token) throw unauthorized('a bearer token or an unused events ticket (POST /v1/events/tickets) is required');
    let principal: Principal | undefined = await tokens.resolve(token, now());
    if (!principal) throw unauthorized('token is unknown, expired or revoked, or the ticket was used or expired');
    const { username } = principal;
    const holding = perUser.get(username) ?? 0;
    if (holding >= EVENT_STREAMS_PER_USER) {
      throw new ApiError('rate_limited', `at most ${EVENT_STREAMS_PER_USER} event streams at once per user; close one first`, undefined, {
        'Retry-After': String(RETRY_AFTER_S),
      });
    }
    requireAccess(principal, 'devices:read', 'developer');

    const body = new PassThrough();
    const res = ctx.res;
    /** Writes unless the client lags too far behind; then it is cut off, and what waited is freed. */
    const write = (text: string) => {
      if (body.destroyed || body.writableEnded || body.write(text)) return;
      const waiting = body.writableLength + body.readableLength + res.writableLength;
      if (waiting <= MAX_BUFFERED_BYTES) return;
      log?.info('an events stream fell behind; its client is cut off', { user: username, waiting_bytes: waiting });
      body.destroy();
      res.destroy();
    };
    const send = (e: TetherEvent) => {
      if (principal && maySee(principal, e)) write(sse(e));
    };
    const unsubscribe = hub.subscribe(send);
    const beat = setInterval(() => {
      tokens.resolve(token, now()).then(
        (current) => {
          principal = current;
          if (!principal) return void body.end(sse({ event: 'end', data: { reason: 'the token is no longer valid' } }));
          write(': beat\n\n');
        },
        // The database did not answer: the stream stays, and the next beat checks again.
        () => write(': beat\n\n'),
      );
    }, BEAT_MS);
    const tokenId = principal.token_id;
    const endNow = () => void body.end(sse({ event: 'end', data: { reason: 'the token was revoked' } }));
    const streams = byToken.get(tokenId) ?? new Set();
    byToken.set(tokenId, streams.add(endNow));
    perUser.set(username, holding + 1);
    const stop = () => {
      clearInterval(beat);
      unsubscribe();
      streams.delete(endNow);
      if (streams.size === 0) byToken.delete(tokenId);
      const left = (perUser.get(username) ?? 1) - 1;
      if (left > 0) perUser.set(username, left);
      else perUser.delete(username);
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
    ok<EventsTicket>(ctx, { ticket, expires_at: new Date(t + TICKET_MS).toISOString() }, 201);
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
