/**
 * Accounts across peers on PostgreSQL (docs/peers.md; docs/http-api.md, users and tokens): a
 * user disabled on one peer is refused at once on another that had its token cached, the stream
 * its token joined there closes with 4401, and the audit event is read from either peer. Peers
 * need PostgreSQL: this file runs in the `postgres` project only.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client } from '../helpers/http';
import { startPeers, type Peers } from '../helpers/peers';
import { startProcess, type Proc } from '../helpers/processes';
import { onPostgres } from '../helpers/store';
import { connectStream } from '../helpers/stream';
import { waitFor } from '../helpers/wait';

describe.runIf(onPostgres)('accounts across two peers', () => {
  let peers: Peers;
  let agent: Proc | undefined;
  beforeAll(async () => {
    peers = await startPeers(2);
  }, 60_000);
  afterAll(async () => {
    await agent?.stop();
    await peers?.stop();
  });

  it('disabling on one peer ends the token on the other at once, and its bearer stream there with 4401', async () => {
    const [a, b] = peers.peers;
    const created = await peers.admin(0).post('/v1/devices', { device_id: 'acp-1' });
    agent = startProcess(['agent', '--server', b!.url, '--device-id', 'acp-1'], { TETHER_DEVICE_TOKEN: created.body.data.agent_token });
    await waitFor(async () => (await peers.admin(0).get('/v1/devices/acp-1')).body.data.agent_status === 'online', 'acp-1 online', 15_000);

    expect((await peers.admin(0).post('/v1/users', { username: 'pia', role: 'administrator', password: 'pia passphrase' })).status).toBe(201);
    const login = await client(b!.url).post('/v1/auth/token', { username: 'pia', password: 'pia passphrase' });
    const pia = client(b!.url, login.body.data.token);
    expect((await pia.get('/v1/me')).status).toBe(200); // remembered by peer b's token cache

    const session = (await peers.admin(1).post('/v1/remote-access/sessions', { device_id: 'acp-1', protocol: 'file-transfer' })).body.data;
    expect(session.websocket_url).toContain(`:${b!.port}/`);
    const stream = connectStream(session.websocket_url.split('?')[0], { authorization: `Bearer ${login.body.data.token}` });
    await stream.opened;
    expect((await stream.request('list', { path: '/' })).ok).toBe(true);

    const disabled = await client(a!.url, peers.adminToken).raw('PATCH', '/v1/users/pia', JSON.stringify({ disabled: true }), {
      'content-type': 'application/json',
    });
    expect(disabled.status, disabled.text).toBe(200);
    const at = Date.now();
    // the bus tells peer b at once; without it, its cache entry would still age out within 5 s
    await waitFor(async () => (await pia.get('/v1/me')).status === 401, 'the token refused on peer b', 5000, 50);
    expect(Date.now() - at).toBeLessThan(5000);
    expect(await stream.closed).toEqual({ code: 4401, reason: 'token revoked' });

    const events = (await peers.admin(1).get('/v1/audit/events?target=user:pia')).body.data;
    expect(events.map((e: { event: string; actor: string }) => [e.event, e.actor])).toEqual([
      ['user.disabled', 'admin'],
      ['login.succeeded', 'pia'],
      ['user.created', 'admin'],
    ]);
    await peers.admin(0).del(`/v1/remote-access/sessions/${session.session_id}`);
  });
});
