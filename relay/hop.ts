/**
 * @module One WebSocket connection of a session stream (a client's or a device's), served by the
 * broker itself rather than by ws, so that the splice can pass frames on as they arrive
 * (`./frame-relay`). The relay is the server of every hop: it reads masked frames and writes
 * unmasked ones. A hop answers its own control frames (pong for ping, the close handshake of
 * RFC 6455 §5.5.1 and §7: ./hop/closing), and never writes one of them into the middle of a data
 * frame that the other side's forwarder is writing on it: a pong waits for the frame's end (only
 * the latest ping is answered, §5.5.3), and so does a close.
 *
 * A peer that pings and never reads cannot make us queue pongs (`shared/websocket/frames/pong-gate.ts`):
 * while the socket waits to drain, only the latest ping is kept and the peer's frames are not
 * read. A hop starts paused: a client's frames wait in its socket until its device joins.
 */
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { readClosePayload } from '../shared/websocket/close';
import { createPongGate } from '../shared/websocket/frames/pong-gate';
import { encodeUnmaskedHeader } from '../shared/websocket/frames/wire';
import { createFrameForwarder, OPCODE, type ControlFrame } from './frame-relay';
import { createHopClosing, writeControl } from './hop/closing';
import { readIntoReusedBuffers } from './read-buffers';
import { completeHandshake } from './hop/handshake';
import type { FrameSource, Hop, HopOptions, HopSink, HopState } from './hop/types';

export type { FrameSource, Hop, HopOptions, HopSink, HopState } from './hop/types';

const CLOSE_GRACE_MS = 5000;

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
function createHop(upgraded: Duplex, head: Buffer, options: HopOptions): Hop {
  const hop = { state: 'open' as HopState };
  let sink: HopSink | undefined;
  let source: FrameSource | undefined;
  const midFrame = (): boolean => source?.readingMidFrame ?? false;
  /** Whether the frame being read is passed on (decided at its header: frames after our close are not). */
  let forwardingFrame = false;
  /** Reading held by the caller (the splice's backpressure; a hop starts held until it is spliced). */
  let held = true;
  let reported = false;
  /** A text frame of the relay's own (a notice) waiting for the end of the frame being written here; only the latest is kept. */
  let ownText: Buffer | undefined;
  const listeners: Array<(code: number, reason: string) => void> = [];
  let resolveDone!: () => void;
  const done = new Promise<void>((resolve) => (resolveDone = resolve));
  /** Bytes that came with the upgrade request, read once the hop is first resumed. */
  let early: Buffer | undefined = head.length > 0 ? head : undefined;
  const { socket } = readIntoReusedBuffers(upgraded, { chunk: onData, settled: () => sink?.settled() ?? true, error: options.onSocketError });

  function report(code: number, reason: string): void {
    if (reported) return;
    reported = true;
    for (const listener of listeners.splice(0)) listener(code, reason);
  }

  const closing = createHopClosing({
    socket,
    graceMs: options.closeGraceMs ?? CLOSE_GRACE_MS,
    hop,
    midFrame,
    sourceAlive: () => source !== undefined && source.state !== 'closed',
    report,
  });
  const pongs = createPongGate(socket, {
    canAnswer: () => hop.state === 'open' && !midFrame(),
    sendPong: (payload) => writeControl(socket, OPCODE.pong, payload),
  });

  function flushOwnText(): void {
    if (ownText === undefined || hop.state !== 'open' || midFrame()) return;
    socket.write(ownText);
    ownText = undefined;
  }

  const net = socket as Partial<Socket>;
  net.setNoDelay?.(true);
  net.setTimeout?.(0);
  socket.pause();

  const input = createFrameForwarder({
    expectMasked: true,
    maxPayload: options.maxPayload,
    onData(chunk) {
      // A header comes while no frame is being read: a frame is passed on whole or not at all.
      if (!input.midFrame) forwardingFrame = hop.state === 'open' && sink !== undefined;
      if (forwardingFrame) sink?.data(chunk);
    },
    onPayloadBytes: (bytes) => forwardingFrame && sink?.payloadBytes(bytes),
    onFrame: (fin, opcode, length) => forwardingFrame && sink?.tap?.frame(fin, opcode, length),
    onPayload: (slice) => forwardingFrame && sink?.tap?.payload(slice),
    onControl: control,
    onProtocolError: (code, reason) => closing.fail(code, reason),
  });

  function control({ opcode, payload }: ControlFrame): void {
    if (opcode === OPCODE.ping) {
      if (hop.state === 'open') pongs.ping(payload);
      return;
    }
    if (opcode !== OPCODE.close) return; // a pong: we send no pings of our own
    const close = readClosePayload(payload);
    if (!close.ok) return closing.fail(close.code, close.reason);
    report(close.code, close.reason);
    closing.echo(close.code);
  }

  function onData(chunk: Buffer): void {
    const to = sink;
    to?.begin();
    input.push(chunk);
    to?.end();
  }
  socket.on('drain', function onDrain() {
    if (pongs.drained() && !held && hop.state === 'open') socket.resume();
  });
  socket.on('end', function onEnd() {
    report(1006, '');
    closing.hangUp();
  });
  socket.on('close', function onClosed() {
    hop.state = 'closed';
    sink = undefined;
    closing.closed();
    report(1006, '');
    resolveDone();
  });

  return {
    socket,
    get state() {
      return hop.state;
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
      if (early) {
        const bytes = early;
        early = undefined;
        onData(bytes);
      }
      if (!held && !pongs.awaitingDrain) socket.resume();
    },
    pipeTo(to) {
      if (hop.state === 'open') sink = to;
    },
    get readingMidFrame() {
      return forwardingFrame && input.midFrame && !input.stopped;
    },
    writtenFrom(from) {
      source = from;
    },
    write(chunk) {
      return hop.state === 'open' ? socket.write(chunk) : false;
    },
    flushControl() {
      if (hop.state !== 'open') return;
      if (closing.pending) return closing.flushPending();
      pongs.answer();
      flushOwnText();
    },
    sendText(text) {
      if (hop.state !== 'open') return;
      const payload = Buffer.from(text, 'utf8');
      ownText = Buffer.concat([encodeUnmaskedHeader(true, OPCODE.text, payload.length), payload]);
      flushOwnText();
    },
    close: closing.close,
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
