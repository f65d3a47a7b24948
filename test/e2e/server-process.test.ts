/**
 * `tether server` as users run it: a real process with its own data dir, start-up lines,
 * first-start bootstrap, health endpoints, graceful SIGTERM, and recovery after SIGKILL.
 */
import { readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { client } from '../helpers/http';
import { startProcess, startServerProcess, type Proc } from '../helpers/processes';
import { startStack, tempDir } from '../helpers/stack';
import { queryStore } from '../helpers/store';
import { waitFor } from '../helpers/wait';

function startAgent(url: string, deviceId: string, token: string): Proc {
  return startProcess(['agent', '--server', url, '--device-id', deviceId], { TETHER_DEVICE_TOKEN: token });
}

describe('tether server process', () => {
  it('bootstraps, serves health and metrics, and shuts down gracefully on SIGTERM', async () => {
    const dataDir = tempDir();
    const { proc, url } = await startServerProcess(dataDir, { TETHER_BOOTSTRAP_TOKEN: 'tth_bootstrap-token-for-tests' });
    expect(proc.stdout[0]).toBe(`created user admin (administrator); its token is in ${join(dataDir, 'admin.token')}`);
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(readFileSync(join(dataDir, 'admin.token'), 'utf8').trim()).toBe('tth_bootstrap-token-for-tests');
    for (const file of readdirSync(dataDir)) {
      expect((statSync(join(dataDir, file)).mode & 0o777).toString(8), file).toBe('600');
    }
    const anon = client(url);
    expect((await anon.get('/healthz')).body).toEqual({ status: 'ok' });
    expect((await anon.get('/readyz')).status).toBe(200);
    const admin = client(url, 'tth_bootstrap-token-for-tests');
    await admin.get('/v1/me');
    const metrics = await anon.get('/metrics');
    expect(metrics.headers.get('content-type')).toContain('text/plain');
    expect(metrics.text).toContain('tether_http_requests_total{method="GET",route="/v1/me",status="200"} 1');
    for (const name of ['tether_agents_online 0', 'tether_sessions_open 0', 'tether_tunnel_bytes_total{direction="to_device"} 0']) {
      expect(metrics.text).toContain(name);
    }
    // JSON logs on stderr, with the request id
    const requestLog = proc.stderr.map((l) => JSON.parse(l)).find((r) => r.msg === 'request' && r.route === '/v1/me');
    expect(requestLog).toMatchObject({ level: 'info', status: 200, user: 'admin', request_id: expect.any(String) });

    const device = (await admin.post('/v1/devices', { device_id: 'sp-1' })).body.data;
    const agent = startAgent(url, 'sp-1', device.agent_token);
    await waitFor(async () => (await admin.get('/v1/devices/sp-1')).body.data.agent_status === 'online', 'agent online');
    const s = (await admin.post('/v1/remote-access/sessions', { device_id: 'sp-1', protocol: 'shell' })).body.data;

    proc.kill('SIGTERM');
    expect(await proc.exited).toEqual({ code: 0, signal: null });
    await agent.waitForLine(new RegExp(`"session ended".*${s.session_id}.*server_shutdown`));
    await agent.stop();
    expect(await queryStore(dataDir, 'SELECT status, close_reason FROM sessions WHERE session_id = ?', [s.session_id])).toEqual([
      { status: 'closed', close_reason: 'server_shutdown' },
    ]);
    expect(await queryStore(dataDir, "SELECT actor, reason FROM audit_events WHERE event = 'session.closed'")).toEqual([
      { actor: 'system', reason: 'server_shutdown' },
    ]);
    // a second start keeps the administrator and prints no bootstrap line
    const again = await startServerProcess(dataDir);
    expect(again.proc.stdout.some((l) => l.startsWith('created user admin'))).toBe(false);
    expect((await client(again.url, 'tth_bootstrap-token-for-tests').get('/v1/me')).status).toBe(200);
    await again.proc.stop();
  });

  it('after SIGKILL, a restart expires sessions whose time passed and closes the rest', async () => {
    const dataDir = tempDir();
    const first = await startServerProcess(dataDir);
    const token = readFileSync(join(dataDir, 'admin.token'), 'utf8').trim();
    const admin = client(first.url, token);
    const device = (await admin.post('/v1/devices', { device_id: 'crash-1' })).body.data;
    const agent = startAgent(first.url, 'crash-1', device.agent_token);
    await waitFor(async () => (await admin.get('/v1/devices/crash-1')).body.data.agent_status === 'online', 'online');
    const short = (await admin.post('/v1/remote-access/sessions', { device_id: 'crash-1', protocol: 'diagnostics', ttl_seconds: 60 })).body.data;
    const long = (await admin.post('/v1/remote-access/sessions', { device_id: 'crash-1', protocol: 'shell', ttl_seconds: 28800 })).body.data;
    first.proc.kill('SIGKILL');
    await first.proc.exited;
    await agent.stop();

    // The server comes back two minutes later: the short session's time passed while it was down.
    const stack = await startStack({ dataDir, now: () => Date.now() + 120_000 });
    try {
      const a = await stack.admin.get(`/v1/remote-access/sessions/${short.session_id}`);
      expect(a.body.data).toMatchObject({ status: 'closed', close_reason: 'expired' });
      const b = await stack.admin.get(`/v1/remote-access/sessions/${long.session_id}`);
      expect(b.body.data).toMatchObject({ status: 'closed', close_reason: 'server_shutdown' });
      const audit = await stack.admin.get('/v1/audit/remote-access');
      expect(audit.body.data.map((e: { event: string; session_id: string }) => [e.event, e.session_id])).toEqual(
        expect.arrayContaining([
          ['session.expired', short.session_id],
          ['session.closed', long.session_id],
          ['session.opened', short.session_id],
          ['session.opened', long.session_id],
        ]),
      );
      // presence does not survive a restart: nobody is connected yet
      expect(await stack.agentStatus('crash-1')).toBe('offline');
    } finally {
      await stack.stop();
    }
  });

  it('agents reconnect on their own when the server comes back', async () => {
    const dataDir = tempDir();
    const first = await startServerProcess(dataDir);
    const token = readFileSync(join(dataDir, 'admin.token'), 'utf8').trim();
    const device = (await client(first.url, token).post('/v1/devices', { device_id: 'back-1' })).body.data;
    const agent = startAgent(first.url, 'back-1', device.agent_token);
    await agent.waitForLine(/connected to broker/);
    first.proc.kill('SIGKILL');
    await agent.waitForLine(/disconnected from broker; reconnecting/);
    const second = await startServerProcess(dataDir, {}, first.port);
    const admin = client(second.url, token);
    await waitFor(async () => (await admin.get('/v1/devices/back-1')).body.data.agent_status === 'online', 'reconnect', 20_000);
    await agent.stop();
    await second.proc.stop();
  });

  it('exits 2 with a clear message on bad settings', async () => {
    const dir = tempDir();
    const file = join(dir, 'tether.yaml');
    writeFileSync(file, 'listen: 127.0.0.1:0\nlog_lvl: debug\n');
    const proc = startProcess(['server', '--config', file], { TETHER_DATA_DIR: dir });
    expect((await proc.exited).code).toBe(2);
    expect(proc.stderr.join('\n')).toContain('log_lvl (TETHER_LOG_LVL): unknown setting');
    const agent = startProcess(['agent'], { TETHER_DEVICE_TOKEN: '' });
    expect((await agent.exited).code).toBe(2);
    expect(agent.stderr.join('\n')).toMatch(/server: is required[\s\S]*deviceId: is required/);
  });
});
