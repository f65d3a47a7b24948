/**
 * @module One WebSocket connection of a session stream (a client's or a device's), served by the
 * broker itself rather than by ws, so that the splice can pass frames on as they arrive
 * (`./frame-relay`). The broker is the server of every hop: it reads masked frames and writes
 * unmasked ones. A hop answers its own control frames (pong for ping, the close handshake of
 * RFC 6455 §5.5.1 and §7), and never writes one of them into the middle of a data frame that the
 * other side's forwarder is writing on it: a pong waits for the frame's end (only the latest
 * ping is answered, §5.5.3), and so does a close (the other side goes on reading until its
 * frame is whole, then stops passing frames on); a close whose frame can never end (its source
 * is gone) ends the connection instead.
 *
 * A peer that pings and never reads cannot make us queue pongs: while the socket waits to drain,
 * only the latest ping is kept (§5.5.3) and the peer's frames are not read, so its pings wait in
 * the kernel and at the peer; on 'drain' the pong goes out and reading resumes. A hop starts
 * paused: a client's frames wait in its socket until its device joins.
 */
import { isUtf8 } from 'node:buffer';
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { FrameTap } from '../shared/recording';
import { closePayload } from '../shared/ws-close';
import { createFrameForwarder, OPCODE, type ControlFrame } from './frame-relay';
import { encodeUnmaskedHeader } from '../shared/ws-frames/wire';
import { completeHandshake } from './hop/handshake';

/** Where the data frames a hop reads go (the splice's other side). */
export interface HopSink {
  /** Before the frames of one read are passed on (to cork the other socket). */
  begin(): void;
  /** Bytes to pass on, in order: rewritten headers and payload slices. */
  data(chunk: Buffer): void;
  /** Payload bytes passed on, for byte counters. */
  payloadBytes(bytes: number): void;
  /** After the frames of one read have been passed on. */
  end(): void;
  /** A tap on the data frames passed on (a recording): each header, then its payload slices. */
  tap?: FrameTap | undefined;
}

export interface HopOptions {
  /** Largest message, summed over its fragments (1009 above it). */
  maxPayload: number;
  /** How long a closing peer may take to answer the close frame before the connection is cut. */
  closeGraceMs?: number;
  onSocketError(err: Error): void;
}

export type HopState = 'open' | 'closing' | 'closed';

/** The hop whose frames another hop writes. */
export interface FrameSource {
  readonly readingMidFrame: boolean;
  readonly state: HopState;
}

export interface Hop {
  readonly socket: Duplex;
  readonly state: HopState;
  readonly isPaused: boolean;
  pause(): void;
  resume(): void;
  /** Sends the data frames this hop reads to `sink`; without one (and once closing) they are dropped. */
  pipeTo(sink: HopSink): void;
  /** True while a data frame this hop reads has been passed on only in part. */
  readonly readingMidFrame: boolean;
  /**
   * Names the hop whose frames are written on this one: while it is `readingMidFrame`, this
   * hop's own control frames (a pong, a close) wait for the frame's end.
   */
  writtenFrom(source: FrameSource): void;
  /** Writes bytes of the other side's frames; returns false when the socket's buffer is full. */
  write(chunk: Buffer): boolean;
  /** Sends the pong or close that waited for a frame's end, if it has ended (or cuts the connection if it never will). */
  flushControl(): void;
  /** Starts the close handshake with `code` (its reason cut to fit), or cuts the connection when a frame is unfinished. */
  close(code: number, reason: string): void;
  /** Cuts the connection. */
  terminate(): void;
  /**
   * `listener` learns once why the hop stopped carrying frames: the peer's close code and reason
   * (1005 for none), a protocol error's code (1002, 1007, 1009), the code of our own close,
   * or 1006 when the connection was lost.
   */
  onClose(listener: (code: number, reason: string) => void): void;
  /** Resolves once the socket is closed. */
  readonly done: Promise<void>;
}

const CLOSE_GRACE_MS = 5000;

/** Close codes a peer may send (RFC 6455 §7.4; ws `isValidStatusCode`). */
const validPeerCode = (code: number): boolean =>
  (code >= 1000 && code <= 1014 && code !== 1004 && code !== 1005 && code !== 1006) || (code >= 3000 && code <= 4999);

const frame = (opcode: number, payload: Buffer): Buffer => Buffer.concat([encodeUnmaskedHeader(true, opcode, payload.length), payload]);

/**
 * Completes a WebSocket upgrade and returns its hop, or refuses the upgrade (an HTTP error) and
 * returns undefined. `chooseProtocol` picks among the offered subprotocols.
 */
export function acceptHop(
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  options: HopOptions & { chooseProtocol?: (offered: string[]) => string | undefined },
): Hop | undefined {
  socket.on('error', options.onSocketError);
  if (!completeHandshake(req, socket, options.chooseProtocol ?? (() => undefined))) return undefined;
  return createHop(socket, head, options);
}

/** The hop of a socket whose handshake is complete (its `'error'` listener already set). */
function createHop(socket: Duplex, head: Buffer, options: HopOptions): Hop {
  const graceMs = options.closeGraceMs ?? CLOSE_GRACE_MS;
  let state: HopState = 'open';
  let sink: HopSink | undefined;
  let source: FrameSource | undefined;
  const midFrame = (): boolean => source?.readingMidFrame ?? false;
  /** Whether the frame this hop's output is inside can still be finished. */
  const sourceAlive = (): boolean => source !== undefined && source.state !== 'closed';
  /** Our close, waiting for the end of the frame being written on this hop. */
  let pendingClose: { code: number; reason: string } | undefined;
  /** Whether the frame being read is passed on (decided at its header: frames after our close are not). */
  let forwardingFrame = false;
  /** The payload of the latest ping not answered yet (a frame was unfinished, or the socket backed up). */
  let unansweredPing: Buffer | undefined;
  /** Reading held by the caller (the splice's backpressure; a hop starts held until it is spliced). */
  let held = true;
  /** Reading held until 'drain' because a pong could not be written without queuing it. */
  let awaitingDrain = false;
  let closeSent = false;
  let graceTimer: NodeJS.Timeout | undefined;
  let reported = false;
  const listeners: Array<(code: number, reason: string) => void> = [];
  let resolveDone!: () => void;
  const done = new Promise<void>((resolve) => (resolveDone = resolve));

  const net = socket as Partial<Socket>;
  net.setNoDelay?.(true);
  net.setTimeout?.(0);
  socket.pause();
  if (head.length > 0) socket.unshift(head);

  const input = createFrameForwarder({
    expectMasked: true,
    maxPayload: options.maxPayload,
    onData(chunk) {
      // A header comes while no frame is being read: a frame is passed on whole or not at all.
      if (!input.midFrame) forwardingFrame = state === 'open' && sink !== undefined;
      if (forwardingFrame) sink?.data(chunk);
    },
    onPayloadBytes: (bytes) => forwardingFrame && sink?.payloadBytes(bytes),
    onFrame: (fin, opcode, length) => forwardingFrame && sink?.tap?.frame(fin, opcode, length),
    onPayload: (slice) => forwardingFrame && sink?.tap?.payload(slice),
    onControl: control,
    onProtocolError: (code, reason) => fail(code, reason),
  });

  function report(code: number, reason: string): void {
    if (reported) return;
    reported = true;
    for (const listener of listeners.splice(0)) listener(code, reason);
  }

  function sendControl(opcode: number, payload: Buffer): void {
    socket.write(frame(opcode, payload));
  }

  /** Cuts the connection if the peer has not closed it within the grace period. */
  function armGrace(): void {
    graceTimer ??= setTimeout(() => socket.destroy(), graceMs);
    graceTimer.unref?.();
  }

  /** Ends our side of the connection, and cuts it if the peer does not follow in time. */
  function hangUp(): void {
    if (state === 'open') state = 'closing';
    if (!socket.writableEnded) socket.end();
    socket.resume(); // read on, to see the peer's close frame or its FIN
    armGrace();
  }

  /** Sends a close frame if a frame of ours is not unfinished; then hangs up or waits for the peer's. */
  function sendClose(code: number, reason: string, thenHangUp: boolean): void {
    if (!closeSent && !midFrame()) {
      closeSent = true;
      sendControl(OPCODE.close, closePayload(code, reason));
      if (!thenHangUp) {
        state = 'closing';
        socket.resume();
        armGrace();
        return;
      }
    }
    hangUp();
  }

  /**
   * Answers the latest ping, unless a frame is being written on this hop (`flushControl` answers
   * it at the frame's end) or the socket is backed up: then the peer is not read until 'drain'.
   */
  function answerPing(): void {
    if (unansweredPing === undefined || state !== 'open' || midFrame()) return;
    if (socket.writableNeedDrain) {
      if (!awaitingDrain) {
        awaitingDrain = true;
        socket.pause();
      }
      return;
    }
    sendControl(OPCODE.pong, unansweredPing);
    unansweredPing = undefined;
  }

  function control({ opcode, payload }: ControlFrame): void {
    if (opcode === OPCODE.ping) {
      if (state !== 'open') return;
      unansweredPing = payload;
      answerPing();
      return;
    }
    if (opcode !== OPCODE.close) return; // a pong: we send no pings of our own
    const code = payload.length >= 2 ? payload.readUInt16BE(0) : 1005;
    if (payload.length >= 2 && !validPeerCode(code)) return fail(1002, 'invalid close code');
    if (payload.length > 2 && !isUtf8(payload.subarray(2))) return fail(1007, 'close reason is not UTF-8');
    report(code, payload.subarray(2).toString());
    // Echo the code (§5.5.1), then the server ends the TCP connection first (§7.1.1).
    sendClose(code, '', true);
  }

  /** The peer broke the protocol: close with `code` and stop reading its frames. */
  function fail(code: number, reason: string): void {
    report(code, '');
    sendClose(code, reason, true);
  }

  socket.on('data', function onData(chunk: Buffer) {
    const to = sink;
    to?.begin();
    input.push(chunk);
    to?.end();
  });
  socket.on('drain', function onDrain() {
    if (!awaitingDrain) return;
    awaitingDrain = false;
    answerPing();
    if (!awaitingDrain && !held && state === 'open') socket.resume();
  });
  socket.on('end', function onEnd() {
    report(1006, '');
    hangUp();
  });
  socket.on('close', function onClosed() {
    state = 'closed';
    sink = undefined;
    clearTimeout(graceTimer);
    report(1006, '');
    resolveDone();
  });

  return {
    socket,
    get state() {
      return state;
    },
    get isPaused() {
      return socket.isPaused();
    },
    pause() {
      held = true;
      socket.pause();
    },
    resume() {
      held = false;
      if (!awaitingDrain) socket.resume();
    },
    pipeTo(to) {
      if (state === 'open') sink = to;
    },
    get readingMidFrame() {
      return forwardingFrame && input.midFrame && !input.stopped;
    },
    writtenFrom(from) {
      source = from;
    },
    write(chunk) {
      return state === 'open' ? socket.write(chunk) : false;
    },
    flushControl() {
      if (state !== 'open') return;
      if (pendingClose) {
        if (midFrame() && sourceAlive()) return;
        // The frame ended (close frame), or never will (sendClose cuts the connection).
        const { code, reason } = pendingClose;
        pendingClose = undefined;
        sendClose(code, reason, false);
        return;
      }
      answerPing();
    },
    close(code, reason) {
      if (state !== 'open' || pendingClose) return;
      report(code, reason);
      if (midFrame() && sourceAlive()) {
        // The other side goes on reading until its frame is whole (bounded by maxPayload), then
        // `flushControl` sends the close; a peer that reads nothing meanwhile is cut in time.
        pendingClose = { code, reason };
        armGrace();
        return;
      }
      sendClose(code, reason, false);
    },
    terminate() {
      report(1006, '');
      socket.destroy();
    },
    onClose(listener) {
      listeners.push(listener);
    },
    done,
  };
}
