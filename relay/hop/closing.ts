/**
 * @module The close handshake of a hop (RFC 6455 §5.5.1 and §7), the relay being the server: a
 * close is never written into the middle of a data frame that the other side's forwarder is
 * writing on this hop. It waits for the frame's end (the other side goes on reading until its
 * frame is whole, then stops passing frames on); a close whose frame can never end (its source is
 * gone) ends the connection instead, and a peer that does not answer in time is cut.
 */
import type { Duplex } from 'node:stream';
import { closePayload } from '../../shared/websocket/close';
import { encodeUnmaskedHeader, OPCODE } from '../../shared/websocket/frames/wire';
import type { HopState } from './types';

/** Writes one control frame, unmasked (the relay is the server). */
export function writeControl(socket: Duplex, opcode: number, payload: Buffer): void {
  socket.write(Buffer.concat([encodeUnmaskedHeader(true, opcode, payload.length), payload]));
}

export interface HopClosingDeps {
  socket: Duplex;
  /** How long a closing peer may take to answer the close frame before the connection is cut. */
  graceMs: number;
  /** The hop's state, which closing moves on. */
  hop: { state: HopState };
  /** A data frame being written on this hop is unfinished. */
  midFrame(): boolean;
  /** Whether that frame can still be finished (its source hop is not closed). */
  sourceAlive(): boolean;
  /** Tells the hop's listeners why it stopped carrying frames (once). */
  report(code: number, reason: string): void;
}

export function createHopClosing(deps: HopClosingDeps) {
  const { socket, hop } = deps;
  /** Our close, waiting for the end of the frame being written on this hop. */
  let pendingClose: { code: number; reason: string } | undefined;
  let closeSent = false;
  let graceTimer: NodeJS.Timeout | undefined;

  /** Cuts the connection if the peer has not closed it within the grace period. */
  function armGrace(): void {
    graceTimer ??= setTimeout(() => socket.destroy(), deps.graceMs);
    graceTimer.unref?.();
  }

  /** Ends our side of the connection, and cuts it if the peer does not follow in time. */
  function hangUp(): void {
    if (hop.state === 'open') hop.state = 'closing';
    if (!socket.writableEnded) socket.end();
    socket.resume(); // read on, to see the peer's close frame or its FIN
    armGrace();
  }

  /** Sends a close frame if a frame of ours is not unfinished; then hangs up or waits for the peer's. */
  function sendClose(code: number, reason: string, thenHangUp: boolean): void {
    if (!closeSent && !deps.midFrame()) {
      closeSent = true;
      writeControl(socket, OPCODE.close, closePayload(code, reason));
      if (!thenHangUp) {
        hop.state = 'closing';
        socket.resume();
        armGrace();
        return;
      }
    }
    hangUp();
  }

  return {
    hangUp,

    /** The peer closed: echo its code (§5.5.1), then the server ends the TCP connection first (§7.1.1). */
    echo(code: number): void {
      sendClose(code, '', true);
    },

    /** The peer broke the protocol: close with `code` and stop reading its frames. */
    fail(code: number, reason: string): void {
      deps.report(code, '');
      sendClose(code, reason, true);
    },

    /** Starts the close handshake with `code`, or, while a frame is unfinished, once it ends. */
    close(code: number, reason: string): void {
      if (hop.state !== 'open' || pendingClose) return;
      deps.report(code, reason);
      if (deps.midFrame() && deps.sourceAlive()) {
        // The other side goes on reading until its frame is whole (bounded by maxPayload), then
        // `flushPending` sends the close; a peer that reads nothing meanwhile is cut in time.
        pendingClose = { code, reason };
        armGrace();
        return;
      }
      sendClose(code, reason, false);
    },

    /** Whether a close waits for the end of a frame. */
    get pending(): boolean {
      return pendingClose !== undefined;
    },

    /** Sends the close that waited, once its frame ended (or cuts the connection if it never will). */
    flushPending(): void {
      if (!pendingClose || (deps.midFrame() && deps.sourceAlive())) return;
      const { code, reason } = pendingClose;
      pendingClose = undefined;
      sendClose(code, reason, false);
    },

    /** The socket closed. */
    closed(): void {
      clearTimeout(graceTimer);
    },
  };
}
