/**
 * A session nobody uses closes `idle` (TETHER_SESSION_IDLE_SECONDS, here 2 s), with a real agent:
 * one never joined closes that long after it opened; one with a client connected stays open past
 * it, and closes that long after its client left; each is audited with reason `idle`, and the
 * device's protocol is free again for whoever asks next.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack } from '../helpers/stack';
import { connectStream } from '../helpers/stream';
import { waitFor } from '../helpers/wait';

const IDLE_S = 2;
let stack: Stack;

beforeAll(async () => {
  stack = await startStack({ env: { TETHER_SESSION_IDLE_SECONDS: String(IDLE_S) } });
  await stack.onlineDevice('idle-1');
});
afterAll(() => stack.stop());

const open = async () => {
  const res = await stack.admin.post('/v1/remote-access/sessions', { device_id: 'idle-1', protocol: 'diagnostics' });
  expect(res.status).toBe(201);
  return res.body.data as { session_id: string; opened_at: string; websocket_url: string };
};
const record = async (id: string) => (await stack.admin.get(`/v1/remote-access/sessions/${id}`)).body.data;
const closedRecord = (id: string) =>
  waitFor(
    async () => {
      const s = await record(id);
      return s.status === 'closed' && s;
    },
    `session ${id} to close`,
    10_000,
  );
const audit = async (id: string) =>
  (await stack.admin.get(`/v1/audit/remote-access?session_id=${id}`)).body.data.map((e: { event: string; actor: string; reason: string | null }) => [
    e.event,
    e.actor,
    e.reason,
  ]);

describe('a session with no client', () => {
  it('never joined: closes idle the idle time after it opened, audited, and frees the protocol', async () => {
    const s = await open();
    const closed = await closedRecord(s.session_id);
    expect(closed).toMatchObject({ close_reason: 'idle' });
    expect(closed.websocket_url).toBeUndefined();
    const idleFor = Date.parse(closed.closed_at) - Date.parse(s.opened_at);
    expect(idleFor).toBeGreaterThanOrEqual(IDLE_S * 1000);
    expect(idleFor).toBeLessThan(IDLE_S * 1000 + 1500);
    expect(await audit(s.session_id)).toEqual([
      ['session.closed', 'system', 'idle'],
      ['session.opened', 'admin', null],
    ]);
    // its ticket now admits no one, with the code of a closed session
    expect((await connectStream(s.websocket_url).closed).code).toBe(4000);
    const next = await open();
    await stack.admin.del(`/v1/remote-access/sessions/${next.session_id}`);
  });

  it('with a client connected: stays open past the idle time; closes the idle time after the client left', async () => {
    const s = await open();
    const client = connectStream(s.websocket_url);
    await client.opened;
    expect((await client.request('system.info')).ok).toBe(true);
    await new Promise((r) => setTimeout(r, (IDLE_S + 1.5) * 1000));
    expect((await record(s.session_id)).status).toBe('open');
    expect((await client.request('system.info')).ok).toBe(true);

    client.ws.close();
    await client.closed;
    const left = Date.now();
    await new Promise((r) => setTimeout(r, (IDLE_S * 1000) / 2));
    expect((await record(s.session_id)).status).toBe('open'); // the clock started when it left
    const closed = await closedRecord(s.session_id);
    expect(closed.close_reason).toBe('idle');
    expect(Date.parse(closed.closed_at) - left).toBeGreaterThanOrEqual(IDLE_S * 1000 - 100);
    expect(await audit(s.session_id)).toEqual([
      ['session.closed', 'system', 'idle'],
      ['session.opened', 'admin', null],
    ]);
  });
});
