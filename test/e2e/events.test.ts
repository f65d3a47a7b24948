/**
 * `GET /v1/events` (issue 17, CONTRACT 9): server-sent events of agent presence and sessions,
 * each to those who may see it; a bearer token or a one-time ticket; the stream ends at once when
 * its token is revoked; a user holds at most EVENT_STREAMS_PER_USER streams at once (a client that
 * does not read: events-slow-client.test.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVENT_STREAMS_PER_USER } from '../../api/events/routes';
import { listenEvents, type EventsListener } from '../helpers/events';
import { startStack, type Stack } from '../helpers/stack';
import { waitFor } from '../helpers/wait';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(() => stack.stop());

/** Listens to the events stream with `headers` (or at `query`), collecting what arrives. */
const listen = (headers: Record<string, string>, query = '') => listenEvents(stack.url, headers, query);

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

describe('the events stream', () => {
  it('tells who may see them of agents coming and going and of sessions opening and closing', async () => {
    const admin = await listen(bearer(stack.adminToken));
    const devToken = await stack.userToken('ev-dev', 'developer');
    const otherToken = await stack.userToken('ev-other', 'developer');
    const dev = await listen(bearer(devToken));
    const other = await listen(bearer(otherToken));
    expect([admin.status, dev.status, other.status]).toEqual([200, 200, 200]);

    const { agent } = await stack.onlineDevice('ev-device');
    for (const l of [admin, dev, other]) {
      await waitFor(() => l.events.some((e) => e.event === 'agent.online' && e.data.device_id === 'ev-device'), 'agent.online');
    }
    const s = (await stack.as(devToken).post('/v1/remote-access/sessions', { device_id: 'ev-device', protocol: 'diagnostics' })).body.data;
    await stack.as(devToken).del(`/v1/remote-access/sessions/${s.session_id}`);
    for (const l of [admin, dev]) {
      await waitFor(() => l.events.some((e) => e.event === 'session.closed' && e.data.session_id === s.session_id), 'session.closed');
      const opened = l.events.find((e) => e.event === 'session.opened' && e.data.session_id === s.session_id);
      expect(opened?.data).toMatchObject({ device_id: 'ev-device', protocol: 'diagnostics', opened_by: 'ev-dev' });
      expect(l.events.find((e) => e.event === 'session.closed')?.data).toMatchObject({ close_reason: 'closed' });
    }
    agent.kill('SIGKILL');
    await waitFor(() => other.events.some((e) => e.event === 'agent.offline' && e.data.device_id === 'ev-device'), 'agent.offline');
    // another developer never hears of ev-dev's session
    expect(other.events.some((e) => e.event.startsWith('session.'))).toBe(false);
    for (const l of [admin, dev, other]) l.close();
  });

  it('takes a one-time ticket instead of a header, once', async () => {
    const issued = await stack.admin.post('/v1/events/tickets', {});
    expect(issued.status).toBe(201);
    const { ticket } = issued.body.data as { ticket: string };
    const first = await listen({}, `?ticket=${ticket}`);
    expect(first.status).toBe(200);
    first.close();
    const again = await listen({}, `?ticket=${ticket}`);
    expect(again.status).toBe(401);
    expect((await listen({})).status).toBe(401);
    const noRole = await stack.userToken('ev-norole', null);
    expect((await listen(bearer(noRole))).status).toBe(403);
  });

  it('ends at once when its token is revoked', async () => {
    await stack.admin.post('/v1/users', { username: 'ev-revoked', role: 'developer' });
    const issued = (await stack.admin.post('/v1/tokens', { username: 'ev-revoked' })).body.data as { token: string; token_id: string };
    const l = await listen(bearer(issued.token));
    expect(l.status).toBe(200);
    expect((await stack.admin.del(`/v1/tokens/${issued.token_id}`)).status).toBe(200);
    await l.ended;
    expect(l.events.at(-1)).toEqual({ event: 'end', data: { reason: 'the token was revoked' } });
  });
});

describe('the events stream, bounded', () => {
  it(`holds at most ${EVENT_STREAMS_PER_USER} streams per user, of any of its tokens: one more is 429 with Retry-After; others still get theirs`, async () => {
    const capToken = await stack.userToken('ev-cap', 'developer');
    const otherToken = await stack.userToken('ev-cap-other', 'developer');
    const held: EventsListener[] = [];
    for (let i = 0; i < EVENT_STREAMS_PER_USER; i++) held.push(await listen(bearer(capToken)));
    expect(held.map((l) => l.status)).toEqual(held.map(() => 200));

    // A second token of the same user is the same user.
    const secondToken = (await stack.admin.post('/v1/tokens', { username: 'ev-cap' })).body.data.token as string;
    for (const token of [capToken, secondToken]) {
      const refused = await listen(bearer(token));
      expect(refused.status).toBe(429);
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
      await refused.ended;
      expect(JSON.parse(refused.text())).toMatchObject({ error: 'rate_limited', status: 429 });
    }
    const other = await listen(bearer(otherToken));
    expect(other.status).toBe(200);

    // A stream that ends gives its place back.
    held.pop()!.close();
    await waitFor(async () => {
      const again = await listen(bearer(secondToken));
      if (again.status === 200) return held.push(again);
      await again.ended;
      return undefined;
    }, 'a place to come free');
    for (const l of [...held, other]) l.close();
  });
});
