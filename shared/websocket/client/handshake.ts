/**
 * @module The client side of the WebSocket opening handshake (RFC 6455 §4.1): dials `ws:` or
 * `wss:`, asks for the upgrade, and checks the answer (the accept key, the subprotocol). A refusal
 * rejects with its HTTP status and the start of its body, so a caller can tell a wrong token
 * from a server that is down.
 */
import { createHash, randomBytes } from 'node:crypto';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';

const ACCEPT_GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';
const MAX_REFUSAL_BODY = 64 * 1024;

export interface HandshakeOptions {
  /** The subprotocol to ask for; the server must choose it. */
  protocol?: string;
  headers?: Record<string, string>;
  handshakeTimeoutMs?: number;
  /** Aborting gives up the connection attempt (the promise rejects). */
  signal?: AbortSignal;
}

/** The handshake failed: `status` and `body` are the server's HTTP answer when there was one. */
export class HandshakeError extends Error {
  constructor(
    message: string,
    readonly status?: number,
    /** The start of the answer's body (at most 64 KiB), as text. */
    readonly body?: string,
  ) {
    super(message);
  }
}

/**
 * Dials `url` and completes the opening handshake; resolves with what `accept` makes of the
 * upgraded socket (and the bytes that came with the answer), or rejects with a HandshakeError
 * naming what went wrong (the server's status, a wrong accept key, a timeout) or the socket's own
 * error (refused, unreachable).
 */
export async function openingHandshake<T>(url: string, options: HandshakeOptions, accept: (socket: Socket, head: Buffer) => T): Promise<T> {
  const target = new URL(url);
  const key = randomBytes(16).toString('base64');
  // TLS loads only for wss: an agent on plain ws (a broker behind a TLS proxy on the same host,
  // or loopback) does not carry it (about 1 MiB of resident memory; BENCHMARKS.md, issue 14).
  const request = target.protocol === 'wss:' ? (await import('node:https')).request : httpRequest;
  return new Promise<T>((resolve, reject) => {
    if (options.signal?.aborted) return reject(new HandshakeError('the connection attempt was given up'));
    const req = request({
      protocol: target.protocol === 'wss:' ? 'https:' : 'http:',
      hostname: target.hostname.replace(/^\[|\]$/g, ''),
      port: target.port,
      path: `${target.pathname}${target.search}`,
      agent: false,
      headers: {
        ...options.headers,
        connection: 'Upgrade',
        upgrade: 'websocket',
        'sec-websocket-version': '13',
        'sec-websocket-key': key,
        ...(options.protocol ? { 'sec-websocket-protocol': options.protocol } : {}),
      },
    });
    // The whole handshake, TCP connect included (req.setTimeout would start only once connected).
    const timer = setTimeout(() => fail(new HandshakeError('Opening handshake has timed out')), options.handshakeTimeoutMs ?? 10_000);
    const fail = (err: Error) => {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
      req.destroy();
      reject(err);
    };
    const onAbort = () => fail(new HandshakeError('the connection attempt was given up'));
    options.signal?.addEventListener('abort', onAbort, { once: true });
    req.on('error', fail);
    req.on('response', function onRefusal(res: IncomingMessage) {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        if (size < MAX_REFUSAL_BODY) chunks.push(chunk);
        size += chunk.length;
      });
      // 'close', not 'end': a refusal cut short in its body (a proxy dropping the connection
      // mid-answer) never ends.
      res.once('close', () => {
        const body = Buffer.concat(chunks).subarray(0, MAX_REFUSAL_BODY).toString('utf8');
        fail(new HandshakeError(`Unexpected server response: ${res.statusCode}`, res.statusCode, body));
      });
    });
    req.on('upgrade', function onUpgrade(res: IncomingMessage, socket: Socket, head: Buffer) {
      socket.on('error', () => {}); // replaced by the caller; a socket never lacks a listener
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
      const expected = createHash('sha1')
        .update(key + ACCEPT_GUID)
        .digest('base64');
      const problem =
        res.headers.upgrade?.toLowerCase() !== 'websocket'
          ? 'Invalid Upgrade header'
          : res.headers['sec-websocket-accept'] !== expected
            ? 'Invalid Sec-WebSocket-Accept header'
            : options.protocol && res.headers['sec-websocket-protocol'] !== options.protocol
              ? 'Server sent no subprotocol or another one'
              : undefined;
      if (problem) {
        socket.destroy();
        return reject(new HandshakeError(problem, res.statusCode));
      }
      resolve(accept(socket, head));
    });
    req.end();
  });
}
