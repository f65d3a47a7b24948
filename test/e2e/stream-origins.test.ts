/**
 * Which browser pages may open a session stream (cross-site WebSocket hijacking): the node's
 * public origin, its loopback aliases when that is a loopback address, and the origins the
 * operator named. Never a page whose Origin merely matches the Host it sent: DNS rebinding
 * (evil.example made to resolve to this server) gives a hostile page exactly that.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawUpgrade } from '../helpers/raw-ws';
import { startStack, type Stack } from '../helpers/stack';

/** The status of a stream upgrade of `path` with these headers: 101 when the origin may open it (then closed, if it holds no credentials). */
async function upgradeStatus(stack: Stack, path: string, headers: Record<string, string | undefined>): Promise<{ status: number; body: string }> {
  const ws = await rawUpgrade(stack.port, path, { headers });
  if (ws.status === 101) ws.socket.destroy();
  else await ws.closed; // a refusal ends the connection after its body
  return { status: ws.status, body: ws.body().toString() };
}

describe('a server on a loopback address, without a public URL', () => {
  let stack: Stack;
  let path: string;
  beforeAll(async () => {
    stack = await startStack({ env: { TETHER_CONSOLE_ORIGINS: 'https://ops.example.com' } });
    await stack.onlineDevice('origin-dev');
    const s = (await stack.admin.post('/v1/remote-access/sessions', { device_id: 'origin-dev', protocol: 'diagnostics' })).body.data;
    const url = new URL(s.websocket_url);
    path = `${url.pathname}${url.search}`; // with the session's ticket
  });
  afterAll(() => stack.stop());

  it('refuses a DNS-rebinding page (its Origin matches the Host it sent) with 403, even with the ticket', async () => {
    for (const host of [`evil.example:${stack.port}`, 'evil.example']) {
      const { status, body } = await upgradeStatus(stack, path, { Host: host, Origin: `http://${host}` });
      expect(status, host).toBe(403);
      expect(JSON.parse(body)).toMatchObject({ error: 'forbidden', status: 403 });
    }
    expect(stack.logs.some((l) => l.includes('refused a session stream from another origin'))).toBe(true);
  });

  it('accepts its own origin and every loopback name of it, same scheme and port', async () => {
    for (const name of ['127.0.0.1', 'localhost', '[::1]']) {
      const origin = `http://${name}:${stack.port}`;
      expect((await upgradeStatus(stack, path, { Host: `${name}:${stack.port}`, Origin: origin })).status, origin).toBe(101);
    }
  });

  it('refuses loopback names with another port or scheme, and origins browsers never send', async () => {
    const others = [
      `http://localhost:${stack.port + 1}`,
      `https://127.0.0.1:${stack.port}`,
      `http://127.0.0.1`,
      `http://127.0.0.2:${stack.port}`,
      'null',
      `http://127.0.0.1:${stack.port}/`,
    ];
    for (const origin of others) expect((await upgradeStatus(stack, path, { Origin: origin })).status, origin).toBe(403);
  });

  it('lets the console opened at localhost connect where websocket_url points (127.0.0.1): its policy names both', async () => {
    const res = await fetch(`http://localhost:${stack.port}/`);
    const policy = res.headers.get('content-security-policy')!;
    expect(policy).toContain(`ws://localhost:${stack.port}`);
    expect(policy).toContain(`ws://127.0.0.1:${stack.port}`);
    const same = (await fetch(`http://127.0.0.1:${stack.port}/`)).headers.get('content-security-policy')!;
    expect(same.match(/ws:\/\/127\.0\.0\.1/g)).toHaveLength(1);
  });

  it('accepts an origin named in TETHER_CONSOLE_ORIGINS, and a client that sends no Origin (the CLI)', async () => {
    expect((await upgradeStatus(stack, path, { Origin: 'https://ops.example.com' })).status).toBe(101);
    expect((await upgradeStatus(stack, path, { Origin: 'http://ops.example.com' })).status).toBe(403);
    expect((await upgradeStatus(stack, path, {})).status).toBe(101);
  });
});

describe('a server with a public URL', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ env: { TETHER_PUBLIC_URL: 'https://tether.example.com' } });
  });
  afterAll(() => stack.stop());

  it("accepts the public URL's origin only: its listening address is not where its pages come from", async () => {
    // No credentials: an origin that passes is upgraded and then closed 4401.
    const path = '/v1/remote-access/sessions/any/stream';
    expect((await upgradeStatus(stack, path, { Host: 'tether.example.com', Origin: 'https://tether.example.com' })).status).toBe(101);
    for (const origin of [`http://127.0.0.1:${stack.port}`, `http://localhost:${stack.port}`, 'http://tether.example.com', 'https://localhost']) {
      expect((await upgradeStatus(stack, path, { Host: `127.0.0.1:${stack.port}`, Origin: origin })).status, origin).toBe(403);
    }
  });
});
