/** Binding first (docs/settings.md, server): a taken port is explained, early requests are held. */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { holdRequests, listen, ListenError } from '../../../cmd/server-listen';

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

function httpServer(): Server {
  const s = createServer();
  servers.push(s);
  return s;
}

describe('listen', () => {
  it('explains a taken port: which setting picks another', async () => {
    const first = httpServer();
    await listen(first, '127.0.0.1', 0, '127.0.0.1:0');
    const { port } = first.address() as AddressInfo;
    const error = await listen(httpServer(), '127.0.0.1', port, `127.0.0.1:${port}`).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ListenError);
    expect(error).toMatchObject({ code: 'address_in_use' });
    expect((error as Error).message).toBe(
      `127.0.0.1:${port} is in use by another process; set TETHER_LISTEN (or listen: in the --config file) to another host:port (port 0 picks a free one)`,
    );
  });

  it("explains an address that is not this machine's", async () => {
    const error = await listen(httpServer(), '192.0.2.1', 0, '192.0.2.1:0').catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'address_unavailable' });
  });
});

describe('holdRequests', () => {
  it('holds requests that arrive before the server is ready, then serves them', async () => {
    const server = httpServer();
    const held = holdRequests(server);
    await listen(server, '127.0.0.1', 0, '127.0.0.1:0');
    const { port } = server.address() as AddressInfo;
    let answered = false;
    const early = fetch(`http://127.0.0.1:${port}/early`).then(async (r) => {
      answered = true;
      return r.text();
    });
    // the request reaches the server and waits there
    await new Promise<void>((resolve) => server.once('request', () => resolve()));
    expect(answered).toBe(false);
    held.ready(
      (req, res) => res.end(`served ${req.url}`),
      (_req, socket) => socket.destroy(),
    );
    expect(await early).toBe('served /early');
    expect(await (await fetch(`http://127.0.0.1:${port}/later`)).text()).toBe('served /later');
  });

  it('drops what it holds when start-up fails', async () => {
    const server = httpServer();
    const held = holdRequests(server);
    await listen(server, '127.0.0.1', 0, '127.0.0.1:0');
    const { port } = server.address() as AddressInfo;
    const early = fetch(`http://127.0.0.1:${port}/`).then(
      () => 'answered',
      () => 'dropped',
    );
    await new Promise<void>((resolve) => server.once('request', () => resolve()));
    held.fail();
    expect(await early).toBe('dropped');
  });
});
