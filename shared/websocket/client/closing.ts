/**
 * @module The close handshake of a WebSocket client (RFC 6455 §7): a close frame sent once; the
 * server ends the TCP connection first, and we end ours once both close frames have passed (or the
 * peer ended its side); a peer that does not answer a close in time is cut. What the peer said
 * (its close code and reason, or the protocol error it committed) is what the client reports.
 */
import type { Socket } from 'node:net';
import { closePayload } from '../close';
import { OPCODE } from '../frames/wire';

export const CLOSE_GRACE_MS = 5000;

export type WsClientState = 'open' | 'closing' | 'closed';

export interface ClientClosingDeps {
  socket: Socket;
  /** The client's state, which closing moves on. */
  conn: { state: WsClientState };
  write(opcode: number, parts: readonly Buffer[]): void;
  /** Reads the peer again (to see its close frame or its FIN). */
  resume(): void;
  /** Reads nothing more of the peer's frames (it broke the protocol). */
  stopReading(): void;
}

export function createClientClosing(deps: ClientClosingDeps) {
  const { socket, conn } = deps;
  let closeSent = false;
  let closeReceived: { code: number; reason: string } | undefined;
  let graceTimer: NodeJS.Timeout | undefined;

  function sendClose(code: number, reason: string): void {
    if (closeSent || socket.writableEnded) return;
    closeSent = true;
    deps.write(OPCODE.close, [closePayload(code, reason)]);
  }

  function hangUp(): void {
    if (!socket.writableEnded) socket.end();
    deps.resume(); // read on, to see the peer's FIN
  }

  function armGrace(ms: number): void {
    graceTimer ??= setTimeout(() => socket.destroy(), ms);
    graceTimer.unref();
  }

  const toClosing = () => {
    if (conn.state === 'open') conn.state = 'closing';
  };

  return {
    /** Whether our close frame went out (nothing may follow it). */
    get sent(): boolean {
      return closeSent;
    },

    /** Starts the close handshake once; the connection is cut if the peer does not answer in time. */
    close(code: number, reason: string, graceMs: number): void {
      if (conn.state !== 'open') return;
      conn.state = 'closing';
      deps.resume(); // or the peer's close frame would never be read
      sendClose(code, reason);
      armGrace(graceMs);
    },

    /** The peer's close frame: echo its code (§5.5.1); both close frames have passed, so our side ends. */
    peerClosed(code: number, reason: string): void {
      closeReceived = { code, reason };
      toClosing();
      sendClose(code, '');
      hangUp();
      armGrace(CLOSE_GRACE_MS);
    },

    /** The peer broke the protocol: close with `code` and stop reading its frames. */
    fail(code: number, reason: string): void {
      deps.stopReading(); // nothing more from the chunk being read either
      closeReceived ??= { code, reason };
      toClosing();
      sendClose(code, reason);
      hangUp();
      armGrace(CLOSE_GRACE_MS);
    },

    /** The peer ended its side: without a close frame before, the stream was cut (1006). */
    ended(): void {
      toClosing();
      hangUp();
    },

    /** The socket closed: what to report (1006 when the peer sent no close). */
    socketClosed(): { code: number; reason: string } {
      conn.state = 'closed';
      clearTimeout(graceTimer);
      return closeReceived ?? { code: 1006, reason: '' };
    },
  };
}
