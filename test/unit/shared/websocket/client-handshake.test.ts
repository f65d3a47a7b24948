/**
 * The client's opening handshake on a bare socket (`shared/websocket/client/handshake.ts`,
 * `./http-answer.ts`: no `node:http`): refusals as servers and proxies send them (Content-Length,
 * chunked, until the connection ends, in pieces), what goes on the wire, and TLS (the certificate
 * is checked, SNI names the host) against real servers on 127.0.0.1 port 0.
 */
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { createServer as createNetServer, type AddressInfo, type Server as NetServer, type Socket } from 'node:net';
import { join, resolve } from 'node:path';
import { build } from 'esbuild';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import { connectWsClient, HandshakeError } from '../../../../shared/websocket/client';
import { tempDir } from '../../../helpers/temp';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function listen(server: NetServer | HttpServer): Promise<number> {
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', () => done()));
  cleanups.push(() => new Promise<void>((done) => server.close(() => done())));
  return (server.address() as AddressInfo).port;
}

/** A TCP server that reads the request's head, then writes `answer`'s pieces one by one (a turn apart). */
async function rawAnswer(answer: string[], opts: { end?: boolean } = {}): Promise<{ port: number; requests: string[] }> {
  const requests: string[] = [];
  const sockets = new Set<Socket>();
  const server = createNetServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
    let text = '';
    socket.on('data', async (chunk: Buffer) => {
      text += chunk.toString('latin1');
      if (!text.includes('\r\n\r\n')) return;
      requests.push(text);
      for (const piece of answer) {
        socket.write(piece);
        await new Promise((r) => setTimeout(r, 5));
      }
      if (opts.end) socket.end();
    });
  });
  cleanups.push(() => sockets.forEach((s) => s.destroy()));
  return { port: await listen(server), requests };
}

async function refusal(url: string): Promise<HandshakeError> {
  const err = await connectWsClient(url, { maxPayload: 1024, handshakeTimeoutMs: 5_000 }).then(
    (ws) => {
      ws.terminate();
      throw new Error('connected');
    },
    (e: Error) => e,
  );
  expect(err).toBeInstanceOf(HandshakeError);
  return err as HandshakeError;
}

describe('refusals', () => {
  it('reads a Content-Length body that arrives in pieces, and stops there', async () => {
    const body = '{"error":"unauthorized","message":"wrong token","status":401}';
    const head = `HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`;
    // The connection stays open after the body: the client must not wait for it to end.
    const server = await rawAnswer([head.slice(0, 20), head.slice(20) + body.slice(0, 10), body.slice(10)]);
    const err = await refusal(`ws://127.0.0.1:${server.port}/x`);
    expect(err).toMatchObject({ message: 'Unexpected server response: 401', status: 401, body });
  });

  it('decodes a chunked body, as a Node server without an upgrade handler sends it', async () => {
    const http = createHttpServer((_req, res) => {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.write('not ');
      setTimeout(() => res.end('here'), 5);
    });
    const port = await listen(http);
    cleanups.push(() => void http.closeAllConnections());
    const err = await refusal(`ws://127.0.0.1:${port}/nowhere`);
    expect(err).toMatchObject({ status: 404, body: 'not here' });
  });

  it('reads a body without a length until the connection ends', async () => {
    const server = await rawAnswer(['HTTP/1.1 502 Bad Gateway\r\n\r\n', 'the upstream ', 'is down'], { end: true });
    expect(await refusal(`ws://127.0.0.1:${server.port}/`)).toMatchObject({ status: 502, body: 'the upstream is down' });
  });

  it('keeps what came of a body cut short', async () => {
    const server = await rawAnswer(['HTTP/1.1 503 Service Unavailable\r\nContent-Length: 100\r\n\r\nbusy'], { end: true });
    expect(await refusal(`ws://127.0.0.1:${server.port}/`)).toMatchObject({ status: 503, body: 'busy' });
  });

  it('keeps at most 64 KiB of a large body', async () => {
    const body = 'x'.repeat(100 * 1024);
    const server = await rawAnswer([`HTTP/1.1 500 Internal Server Error\r\nContent-Length: ${body.length}\r\n\r\n${body}`]);
    expect((await refusal(`ws://127.0.0.1:${server.port}/`)).body).toHaveLength(64 * 1024);
  });

  it('fails on an answer that is not HTTP, and on a connection ended before any answer', async () => {
    const garbage = await rawAnswer(['SSH-2.0-OpenSSH_9.6\r\n\r\n']);
    await expect(connectWsClient(`ws://127.0.0.1:${garbage.port}/`, { maxPayload: 1024 })).rejects.toThrow(/^Parse Error/);
    const silent = await rawAnswer([], { end: true });
    await expect(connectWsClient(`ws://127.0.0.1:${silent.port}/`, { maxPayload: 1024 })).rejects.toMatchObject({
      message: 'socket hang up',
      code: 'ECONNRESET',
    });
  });
});

describe('the request', () => {
  it('names the host with its port, the path and query, and the headers given', async () => {
    const server = await rawAnswer(['HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n']);
    await refusal(`ws://127.0.0.1:${server.port}/v1/agent/stream?a=1`);
    const [line, ...headers] = server.requests[0]!.split('\r\n');
    expect(line).toBe('GET /v1/agent/stream?a=1 HTTP/1.1');
    expect(headers).toContain(`Host: 127.0.0.1:${server.port}`);
    expect(headers).toContain('connection: Upgrade');
    expect(headers).toContain('upgrade: websocket');
    expect(headers).toContain('sec-websocket-version: 13');
  });

  it('refuses a header value that would forge another header, without dialling', async () => {
    const server = await rawAnswer([]);
    const attempt = connectWsClient(`ws://127.0.0.1:${server.port}/`, { maxPayload: 1024, headers: { authorization: 'Bearer x\r\nx-admin: 1' } });
    await expect(attempt).rejects.toMatchObject({ code: 'ERR_INVALID_CHAR' });
    expect(server.requests).toEqual([]);
  });
});

describe('TLS', () => {
  /** A self-signed certificate for localhost and 127.0.0.1, made with openssl. */
  function certificate(): { key: string; cert: string; certFile: string } {
    const dir = tempDir('tether-ws-tls-');
    const [keyFile, certFile] = [join(dir, 'key.pem'), join(dir, 'cert.pem')];
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-keyout',
        keyFile,
        '-out',
        certFile,
        '-days',
        '1',
        '-subj',
        '/CN=localhost',
        '-addext',
        'subjectAltName=DNS:localhost,IP:127.0.0.1',
      ],
      { stdio: 'ignore' },
    );
    return { key: execFileSync('cat', [keyFile]).toString(), cert: execFileSync('cat', [certFile]).toString(), certFile };
  }

  async function wssServer(tls: { key: string; cert: string }): Promise<{ port: number; servernames: Array<string | false> }> {
    const servernames: Array<string | false> = [];
    const https = createHttpsServer(tls);
    https.on('secureConnection', (s: { servername: string | false }) => servernames.push(s.servername));
    const wss = new WebSocketServer({ server: https });
    wss.on('connection', (ws) => ws.on('message', (data) => ws.send(`echo ${data.toString()}`)));
    cleanups.push(() => void https.closeAllConnections());
    cleanups.push(() => wss.close());
    return { port: await listen(https), servernames };
  }

  it('refuses a certificate it cannot verify', async () => {
    const server = await wssServer(certificate());
    await expect(connectWsClient(`wss://localhost:${server.port}/`, { maxPayload: 1024 })).rejects.toMatchObject({ code: 'DEPTH_ZERO_SELF_SIGNED_CERT' });
    expect(server.servernames).toEqual([]);
  }, 20_000);

  it('connects to a server whose certificate it trusts, naming the host by SNI (and not an address)', async () => {
    const tls = certificate();
    const server = await wssServer(tls);
    // Trusted roots are read at start: the client runs in a node of its own, given the certificate.
    const dir = tempDir('tether-ws-tls-client-');
    const script = join(dir, 'client.cjs');
    await build({
      stdin: {
        contents: `import { connectWsClient } from './shared/websocket/client';
          (async () => { for (const url of process.argv.slice(2)) {
            const ws = await connectWsClient(url, { maxPayload: 1024 });
            ws.send('hi');
            console.log(await new Promise((r) => ws.once('text', r)));
            ws.close(1000, 'done');
            await new Promise((r) => ws.once('close', r));
          } })().catch((e) => { console.log('failed', e.code, e.message); process.exit(1); });`,
        resolveDir: resolve(__dirname, '../../../..'),
        loader: 'ts',
      },
      bundle: true,
      platform: 'node',
      format: 'cjs',
      outfile: script,
      logLevel: 'error',
    });
    writeFileSync(join(dir, 'package.json'), '{}');
    const child = spawn(process.execPath, [script, `wss://localhost:${server.port}/a`, `wss://127.0.0.1:${server.port}/b`], {
      env: { ...process.env, NODE_EXTRA_CA_CERTS: tls.certFile },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
    const [code] = (await once(child, 'exit')) as [number];
    expect(out).toBe('echo hi\necho hi\n');
    expect(code).toBe(0);
    expect(server.servernames).toEqual(['localhost', false]);
  }, 30_000);
});
