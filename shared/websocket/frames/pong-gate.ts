/**
 * @module Pings answered without ever queuing pongs (RFC 6455 §5.5.3: only the latest ping needs
 * an answer), for both ends of our own WebSocket code: while the socket waits to drain, the latest
 * ping is kept and the peer is not read, so a peer that pings and never reads leaves its pings in
 * the kernel and at its own end, not in our memory. On 'drain' the pong goes out.
 */
import type { Duplex } from 'node:stream';

export interface PongGateHooks {
  /** Whether a pong may be written now (the connection is open, no frame of ours is unfinished). */
  canAnswer(): boolean;
  sendPong(payload: Buffer): void;
}

export function createPongGate(socket: Duplex, hooks: PongGateHooks) {
  /** The payload of the latest ping not answered yet. */
  let unanswered: Buffer | undefined;
  /** Reading held until 'drain' because a pong could not be written without queuing it. */
  let awaitingDrain = false;

  /** Answers the latest ping, unless it may not now, or the socket is backed up (then the peer is not read until 'drain'). */
  function answer(): void {
    if (unanswered === undefined || !hooks.canAnswer()) return;
    if (socket.writableNeedDrain) {
      if (!awaitingDrain) {
        awaitingDrain = true;
        socket.pause();
      }
      return;
    }
    hooks.sendPong(unanswered);
    unanswered = undefined;
  }

  return {
    /** The peer pinged. */
    ping(payload: Buffer): void {
      unanswered = payload;
      answer();
    },
    answer,
    /** On the socket's 'drain': answers the ping that waited; true when it held reading and no longer does. */
    drained(): boolean {
      if (!awaitingDrain) return false;
      awaitingDrain = false;
      answer();
      return !awaitingDrain;
    },
    /** Whether reading is held for a pong. */
    get awaitingDrain(): boolean {
      return awaitingDrain;
    },
  };
}
