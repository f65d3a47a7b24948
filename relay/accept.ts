/**
 * @module Accepting WebSocket upgrades so that no peer can end the process. Node removes its
 * own `'error'` listener from a socket when it hands it to the `'upgrade'` event, and ws
 * emits protocol violations (an unmasked frame, RSV bits, a bad opcode, an oversized control
 * frame) as `'error'` on the WebSocket: an emitter without a listener throws, and that ends the
 * process. Every socket therefore gets a listener the moment it exists, before any other work,
 * whatever becomes of it (refused, admitted, closing).
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { WebSocket, WebSocketServer } from 'ws';
import type { Logger } from '../shared/log';

/** Guards the raw socket of an upgrade request; call first thing in the `'upgrade'` handler. */
export function guardRawSocket(socket: Duplex, log: Logger): void {
  socket.on('error', function onRawSocketError(err: NodeJS.ErrnoException) {
    log.debug('upgrade socket error', { err: err.code ?? err.message });
  });
}

/**
 * Completes an upgrade and hands over a WebSocket that already has an `'error'` listener (ws
 * closes the connection itself after emitting it: 1002 for protocol errors, 1009 for size).
 */
export function acceptWebSocket(
  wss: WebSocketServer,
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  onError: (err: Error) => void,
  then: (ws: WebSocket) => void,
): void {
  wss.handleUpgrade(req, socket, head, function accepted(ws) {
    ws.on('error', onError);
    then(ws);
  });
}
