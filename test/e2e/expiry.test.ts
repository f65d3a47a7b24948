/** Seed 3.1: an open session closes when its TTL elapses, is audited, and the agent is told. */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { processExists } from '../../agent/shell/process-session';
import type { Proc } from '../helpers/processes';
import { startStack, type Stack } from '../helpers/stack';
import { connectStream } from '../helpers/stream';
import { waitFor } from '../helpers/wait';

let stack: Stack;
let agent: Proc;
let offset = 0; // the server's clock runs `offset` ms ahead of the real one

beforeAll(async () => {
  stack = await startStack({ now: () => Date.now() + offset });
  ({ agent } = await stack.onlineDevice('ttl-1'));
});
afterAll(() => stack.stop());

it('expires a session when its TTL elapses and tells the agent', async () => {
  const s = (await stack.admin.post('/v1/remote-access/sessions', { device_id: 'ttl-1', protocol: 'diagnostics', ttl_seconds: 60 })).body.data;
  await agent.waitForLine(new RegExp(`"session opened".*${s.session_id}`));
  expect((await stack.admin.get(`/v1/remote-access/sessions/${s.session_id}`)).body.data.status).toBe('open');

  offset += 61_000; // a minute passes
  const closed = await waitFor(
    async () => {
      const got = (await stack.admin.get(`/v1/remote-access/sessions/${s.session_id}`)).body.data;
      return got.status === 'closed' && got;
    },
    'the session to expire',
    10_000,
  );
  expect(closed).toMatchObject({ close_reason: 'expired' });
  const events = (await stack.admin.get(`/v1/audit/remote-access?session_id=${s.session_id}`)).body.data;
  expect(events.map((e: { event: string; actor: string }) => [e.event, e.actor])).toEqual([
    ['session.expired', 'system'],
    ['session.opened', 'admin'],
  ]);
  await agent.waitForLine(new RegExp(`"session ended".*${s.session_id}.*"reason":"expired"`), 5000);
  // the clock step did not fool the heartbeat check, which runs on the monotonic clock
  expect(stack.logs.some((l) => l.includes('missed heartbeats'))).toBe(false);
  expect(agent.stderr.some((l) => l.includes('disconnected from broker'))).toBe(false);
  // the protocol is free again, and an expired session cannot be closed
  expect((await stack.admin.del(`/v1/remote-access/sessions/${s.session_id}`)).status).toBe(404);
  const again = await stack.admin.post('/v1/remote-access/sessions', { device_id: 'ttl-1', protocol: 'diagnostics' });
  expect(again.status).toBe(201);
});

it('TTL expiry closes an open stream with 4001', async () => {
  const s = (await stack.admin.post('/v1/remote-access/sessions', { device_id: 'ttl-1', protocol: 'shell', ttl_seconds: 60 })).body.data;
  const client = connectStream(s.websocket_url);
  await client.opened;
  client.send(Buffer.from('echo "pid=<$$>"\n'));
  const pid = Number(/pid=<(\d+)>/.exec(await client.waitForOutput(/pid=<(\d+)>/))![1]);
  offset += 61_000;
  expect(await client.closed).toEqual({ code: 4001, reason: 'session expired' });
  await waitFor(() => !processExists(pid), 'the shell to end', 5000);
  expect((await connectStream(s.websocket_url).closed).code).toBe(4001);
});

it('the device enforces the TTL on its own when no close message comes', async () => {
  // This server's clock runs 59 s behind the device's: by the device's clock the session
  // expires one second after it opens, while the server still has a minute to go and sends nothing.
  const behind = await startStack({ now: () => Date.now() - 59_000 });
  try {
    const { agent } = await behind.onlineDevice('ttl-own');
    const s = (await behind.admin.post('/v1/remote-access/sessions', { device_id: 'ttl-own', protocol: 'shell', ttl_seconds: 60 })).body.data;
    const client = connectStream(s.websocket_url);
    await client.opened;
    expect(await client.closed).toEqual({ code: 4001, reason: 'session expired' });
    await agent.waitForLine(new RegExp(`"session ended".*${s.session_id}.*"reason":"expired"`));
    expect((await behind.admin.get(`/v1/remote-access/sessions/${s.session_id}`)).body.data.status).toBe('open');
  } finally {
    await behind.stop();
  }
});
