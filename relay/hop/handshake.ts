/**
 * @module The server side of the WebSocket opening handshake (RFC 6455 §4.2), for the sockets the
 * broker forwards frames on itself: the same checks ws makes (`lib/websocket-server.js`), the
 * same refusals (405 for another method, 400 for a broken upgrade), and the 101 answer with the
 * accept key. No extensions are ever accepted (§9.1), so frames pass through untouched.
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { rejectUpgrade } from '../reject';

const WS_GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';
/** A base64 encoding of 16 bytes (§4.1). */
const KEY = /^[+/0-9A-Za-z]{22}==$/;
/** A subprotocol is an HTTP token (RFC 7230 §3.2.6). */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

export const acceptKey = (key: string): string =>
  createHash('sha1')
    .update(key + WS_GUID)
    .digest('base64');

/** The subprotocols a client offers, in its order; undefined when the header is malformed. */
export function offeredProtocols(header: string | undefined): string[] | undefined {
  if (header === undefined) return [];
  const names = header.split(',').map((name) => name.trim());
  return names.every((name) => TOKEN.test(name)) && new Set(names).size === names.length ? names : undefined;
}

/**
 * Completes the handshake on `socket`, or refuses it with an HTTP error and returns false.
 * `chooseProtocol` picks one of the offered subprotocols (undefined: answer with none).
 */
export function completeHandshake(req: IncomingMessage, socket: Duplex, chooseProtocol: (offered: string[]) => string | undefined): boolean {
  const key = req.headers['sec-websocket-key'];
  const version = Number(req.headers['sec-websocket-version']);
  const protocols = offeredProtocols(req.headers['sec-websocket-protocol']);
  const refusal =
    req.method !== 'GET'
      ? { status: 405, message: 'a WebSocket upgrade must be a GET' }
      : req.headers.upgrade?.toLowerCase() !== 'websocket'
        ? { status: 400, message: 'the Upgrade header must be "websocket"' }
        : key === undefined || !KEY.test(key)
          ? { status: 400, message: 'missing or invalid Sec-WebSocket-Key header' }
          : version !== 13 && version !== 8
            ? { status: 400, message: 'missing or invalid Sec-WebSocket-Version header (13 expected)' }
            : protocols === undefined
              ? { status: 400, message: 'invalid Sec-WebSocket-Protocol header' }
              : undefined;
  if (refusal) {
    rejectUpgrade(socket, refusal.status, 'bad_request', refusal.message);
    return false;
  }
  if (!socket.readable || !socket.writable) {
    socket.destroy();
    return false;
  }
  const protocol = chooseProtocol(protocols!);
  socket.write(
    'HTTP/1.1 101 Switching Protocols\r\n' +
      'Upgrade: websocket\r\n' +
      'Connection: Upgrade\r\n' +
      `Sec-WebSocket-Accept: ${acceptKey(key!)}\r\n` +
      (protocol === undefined ? '' : `Sec-WebSocket-Protocol: ${protocol}\r\n`) +
      '\r\n',
  );
  return true;
}
