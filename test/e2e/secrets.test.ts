/**
 * Secrets stay secret: after a run that uses every kind of secret (passwords, user, service,
 * administrator and agent tokens, stream tickets, and wrong guesses at each), none of them appears
 * in the server's or the agent's logs at debug level, nor in plain text anywhere in the data dir;
 * listings of users and tokens show neither the tokens nor their hashes.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { client } from '../helpers/http';
import { startProcess } from '../helpers/processes';
import { tempDir } from '../helpers/stack';
import { connectStream } from '../helpers/stream';
import { waitFor } from '../helpers/wait';

describe('secrets', () => {
  it('never appear in logs or in the data dir, only their hashes', async () => {
    const dataDir = tempDir();
    const server = startProcess(['server'], { TETHER_LISTEN: '127.0.0.1:0', TETHER_DATA_DIR: dataDir, TETHER_LOG_LEVEL: 'debug' });
    const url = (await server.waitForLine(/^tether listening on /)).replace('tether listening on ', '');
    const adminToken = readFileSync(join(dataDir, 'admin.token'), 'utf8').trim();
    const admin = client(url, adminToken);
    const anon = client(url);
    const password = 'correct-horse-battery-staple-42';
    const wrongPassword = 'correct-horse-battery-staple-43';
    const forgedToken = 'tth_forgedforgedforgedforgedforged42';

    expect((await admin.post('/v1/users', { username: 'sam', role: 'platform-engineer', password })).status).toBe(201);
    const login = await anon.post('/v1/auth/token', { username: 'sam', password });
    expect(login.status).toBe(200);
    const samToken = login.body.data.token as string;
    expect((await anon.post('/v1/auth/token', { username: 'sam', password: wrongPassword })).status).toBe(401);
    expect((await anon.post('/v1/auth/token', { username: 'nobody', password })).status).toBe(401);
    // a password where a field does not belong is refused without being repeated
    expect((await anon.post('/v1/auth/token', { username: 'sam', password, otp: password })).status).toBe(400);
    expect((await client(url, forgedToken).get('/v1/me')).status).toBe(401);
    const service = (await admin.post('/v1/users', { username: 'robot', role: 'developer', kind: 'service' })).body.data;
    expect(service.username).toBe('robot');
    const serviceToken = (await admin.post('/v1/tokens', { username: 'robot', scopes: ['fleet:read'], tenants: ['t1'] })).body.data;
    expect((await client(url, serviceToken.token).get('/v1/fleet/groups', { 'x-tenant-id': 't1' })).status).toBe(200);
    expect((await admin.del(`/v1/tokens/${serviceToken.token_id}`)).status).toBe(200);
    expect((await client(url, serviceToken.token).get('/v1/me')).status).toBe(401);

    // Created with an Idempotency-Key, so the response holding the agent token is kept for replays (sealed).
    const idempotencyKey = 'sec-1-create-once';
    const device = (await admin.post('/v1/devices', { device_id: 'sec-1' }, { 'idempotency-key': idempotencyKey })).body.data;
    const agentToken = device.agent_token as string;
    const replayed = await admin.post('/v1/devices', { device_id: 'sec-1' }, { 'idempotency-key': idempotencyKey });
    expect(replayed.headers.get('idempotent-replayed')).toBe('true');
    const agent = startProcess(['agent', '--server', url, '--device-id', 'sec-1', '--no-warm-shell'], {
      TETHER_DEVICE_TOKEN: agentToken,
      TETHER_LOG_LEVEL: 'debug',
    });
    await waitFor(async () => (await admin.get('/v1/devices/sec-1')).body.data.agent_status === 'online', 'agent online');
    const wrongAgent = startProcess(['agent', '--server', url, '--device-id', 'sec-1'], { TETHER_DEVICE_TOKEN: `${agentToken}x` });
    await wrongAgent.waitForLine(/refused|401/);
    await wrongAgent.stop();

    const sam = client(url, samToken);
    const newPassword = 'correct-horse-battery-staple-44';
    expect((await sam.put('/v1/users/sam/password', { password: newPassword, current_password: wrongPassword })).status).toBe(403);
    expect((await sam.put('/v1/users/sam/password', { password: newPassword, current_password: password })).status).toBe(200);
    const relogin = await anon.post('/v1/auth/token', { username: 'sam', password: newPassword });
    expect(relogin.status).toBe(200);
    const reloginToken = relogin.body.data.token as string;
    const shell = (await sam.post('/v1/remote-access/sessions', { device_id: 'sec-1', protocol: 'shell' })).body.data;
    const ticket = new URL(shell.websocket_url).searchParams.get('ticket')!;
    const byTicket = connectStream(shell.websocket_url);
    await byTicket.opened;
    byTicket.send(Buffer.from('echo ticket-ok\n'));
    await byTicket.waitForOutput(/ticket-ok/);
    const base = shell.websocket_url.split('?')[0];
    expect((await connectStream(`${base}?ticket=${ticket}x`).closed).code).toBe(4004);
    // secrets where they do not belong, in query strings of plain requests, are not logged either
    expect((await sam.get(`/v1/me?ticket=${ticket}&token=${samToken}`)).status).toBe(200); // /v1/me takes no parameters
    expect((await anon.get(`/v1/devices?access_token=${adminToken}`)).status).toBe(401);
    expect((await sam.get(`/v1/remote-access/sessions?ticket=${ticket}`)).status).toBe(400); // unknown parameter
    byTicket.ws.close();
    await byTicket.closed;
    const byBearer = connectStream(base, { authorization: `Bearer ${samToken}` });
    await byBearer.opened;
    byBearer.send(Buffer.from('echo bearer-ok\n'));
    await byBearer.waitForOutput(/bearer-ok/);
    expect((await sam.del(`/v1/remote-access/sessions/${shell.session_id}`)).status).toBe(200);
    await byBearer.closed;
    const listings = [await admin.get('/v1/tokens?all=true&status=all&per_page=200'), await sam.get('/v1/tokens?status=all'), await admin.get('/v1/users')];
    for (const res of listings) expect(res.status).toBe(200);
    const listed = listings.map((res) => res.text).join('\n');
    expect(listed).toContain(serviceToken.token_id); // the listing does show the tokens, revoked ones included

    await agent.stop();
    await server.stop();

    const secrets = {
      adminToken,
      samToken,
      reloginToken,
      serviceToken: serviceToken.token as string,
      agentToken,
      ticket,
      password,
      wrongPassword,
      newPassword,
      forgedToken,
      idempotencyKey,
    };
    for (const [name, secret] of Object.entries(secrets)) {
      expect(listed.includes(secret), `${name} in a listing`).toBe(false);
      expect(listed.includes(createHash('sha256').update(secret).digest('hex')), `the hash of ${name} in a listing`).toBe(false);
    }
    const logs = [...server.stdout, ...server.stderr, ...agent.stdout, ...agent.stderr, ...wrongAgent.stdout, ...wrongAgent.stderr].join('\n');
    expect(logs).toContain('"msg":"request"'); // the logs do tell what happened, down to each request
    expect(logs).toContain(shell.session_id);
    for (const [name, secret] of Object.entries(secrets)) expect(logs.includes(secret), `${name} in the logs`).toBe(false);

    // Only hashes are stored: no secret in any file of the data dir (the bootstrap token file aside),
    // recordings included (read uncompressed); files are 0600, directories 0700.
    const files = readdirSync(dataDir, { recursive: true, withFileTypes: true })
      .filter((d) => d.name !== 'admin.token')
      .map((d) => ({ path: join(d.parentPath, d.name), dir: d.isDirectory() }));
    expect(files.map((f) => f.path)).toContain(join(dataDir, 'tether.db'));
    expect(files.some((f) => f.path.endsWith('.cast.gz'))).toBe(true); // the shell session was recorded
    for (const { path, dir } of files) {
      expect((statSync(path).mode & 0o777).toString(8), path).toBe(dir ? '700' : '600');
      if (dir) continue;
      const bytes = path.endsWith('.gz') ? gunzipSync(readFileSync(path)) : readFileSync(path);
      for (const [name, secret] of Object.entries(secrets)) expect(bytes.includes(secret), `${name} in ${path}`).toBe(false);
    }
  });
});
