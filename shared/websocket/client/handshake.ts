/**
 * @module The client side of the WebSocket opening handshake (RFC 6455 §4.1): dials `ws:` or
 * `wss:`, asks for the upgrade, and checks the answer (the accept key, the subprotocol). A refusal
 * rejects with its HTTP status and the start of its body, so a caller can tell a wrong token
 * from a server that is down.
 */
import { createHash, randomBytes } from 'node:crypto';
import { connect, isIP, type Socket } from 'node:net';
import { createBodyReader, parseAnswerHead, upgradeRequest, type AnswerHead } from './http-answer';

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
  const tls = target.protocol === 'wss:' ? await import('node:tls') : undefined;
  return new Promise<T>((resolve, reject) => {
    if (options.signal?.aborted) return reject(new HandshakeError('the connection attempt was given up'));
    let request: Buffer;
    try {
      const headers = {
        ...options.headers,
        connection: 'Upgrade',
        upgrade: 'websocket',
        'sec-websocket-version': '13',
        'sec-websocket-key': key,
        ...(options.protocol ? { 'sec-websocket-protocol': options.protocol } : {}),
      };
      request = upgradeRequest(`${target.pathname}${target.search}`, target.host, Object.entries(headers));
    } catch (err) {
      return reject(err as Error);
    }
    const host = target.hostname.replace(/^\[|\]$/g, '');
    const port = Number(target.port) || (tls ? 443 : 80);
    // As https.request: the certificate is checked, SNI names the host unless it is an address.
    const socket: Socket = tls ? tls.connect({ host, port, servername: isIP(host) ? undefined : host }) : connect({ host, port });
    // The whole handshake, TCP connect included.
    const timer = setTimeout(() => fail(new HandshakeError('Opening handshake has timed out')), options.handshakeTimeoutMs ?? 10_000);
    const onAbort = () => fail(new HandshakeError('the connection attempt was given up'));
    options.signal?.addEventListener('abort', onAbort, { once: true });
    let received: Buffer = Buffer.alloc(0);
    /** The refusal's body, once its head has come. */
    let refusal: { status: number; body: ReturnType<typeof createBodyReader> } | undefined;

    function settle(): void {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
      socket.off('data', onData);
      socket.off('close', onClose);
    }
    function fail(err: Error): void {
      settle();
      socket.destroy();
      reject(err);
    }
    const refused = () => fail(new HandshakeError(`Unexpected server response: ${refusal!.status}`, refusal!.status, refusal!.body.text));
    // Before the answer's head, an error is the attempt's (refused, reset); after it, the refusal ends with the connection.
    socket.on('error', (err) => (refusal ? undefined : fail(err)));
    socket.on('data', onData);
    socket.on('close', onClose);
    socket.write(request);

    function onClose(): void {
      if (refusal) refused();
      else fail(Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }));
    }

    function onData(chunk: Buffer): void {
      try {
        if (refusal) return void (refusal.body.push(chunk) && refused());
        received = received.length > 0 ? Buffer.concat([received, chunk]) : chunk;
        const answer = parseAnswerHead(received);
        if (!answer) return;
        if (answer.status !== 101) {
          refusal = { status: answer.status, body: createBodyReader(answer, MAX_REFUSAL_BODY) };
          if (refusal.body.push(answer.rest)) refused();
          return;
        }
        upgraded(answer);
      } catch (err) {
        fail(err as Error);
      }
    }

    function upgraded({ headers, rest }: AnswerHead): void {
      settle();
      socket.pause();
      socket.removeAllListeners('error');
      socket.on('error', () => {}); // replaced by the caller; a socket never lacks a listener
      const expected = createHash('sha1')
        .update(key + ACCEPT_GUID)
        .digest('base64');
      const problem =
        headers.upgrade?.toLowerCase() !== 'websocket'
          ? 'Invalid Upgrade header'
          : headers['sec-websocket-accept'] !== expected
            ? 'Invalid Sec-WebSocket-Accept header'
            : options.protocol && headers['sec-websocket-protocol'] !== options.protocol
              ? 'Server sent no subprotocol or another one'
              : undefined;
      if (problem) {
        socket.destroy();
        return reject(new HandshakeError(problem, 101));
      }
      resolve(accept(socket, rest));
    }
  });
}
