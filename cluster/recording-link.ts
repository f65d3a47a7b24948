/**
 * @module Shell recordings of streams spliced on an edge node: the edge's taps pack the frames
 * they see into batches (at most every 20 ms or 64 KiB) and publish them to the control node,
 * whose recorder writes them as if the stream ran there. Only the frames of recorded streams
 * travel (shell sessions); file copies and forwarded ports never do.
 *
 * The control node records only a stream of a session it granted to that very node, and
 * takes the session's details from its own records, never from the message.
 *
 * A batch is a run of records: `[side][kind]` then, for a frame header, `fin` (1 byte), `opcode`
 * (1 byte), `length` (4 bytes, big-endian); for a payload slice, its length (4 bytes) and bytes.
 */
import type { MsgHdrs } from '@nats-io/transport-node';
import { CONTROL_VERBS, controlSubject, RECORDING_HEADERS, recordingStart } from '../shared/protocol/cluster';
import type { Logger } from '../shared/log';
import type { FrameTap, StreamRecorder, StreamRecording } from '../shared/relay/recording';
import type { StreamGrant } from '../shared/protocol/session-stream';
import type { Bus } from './bus';

const FLUSH_MS = 20;
const FLUSH_BYTES = 64 * 1024;
const SIDE = { client: 0, device: 1 } as const;
const KIND = { frame: 0, payload: 1 } as const;

/** At most this many recordings open at once per node (a node cannot make the control node keep more). */
const MAX_OPEN_PER_NODE = 4_096;

/** The edge's recorder: frames go to the control node. */
export function publishedRecordings(bus: Bus, nodeName: string, log: Logger): StreamRecorder {
  const subject = controlSubject(nodeName, CONTROL_VERBS.recording);
  return {
    start(grant: StreamGrant, streamId: string): StreamRecording | undefined {
      // Whether shells are recorded at all is the control node's setting: it drops what it does not record.
      if (grant.protocol !== 'shell') return undefined;
      const headers = (kind: string) => ({ [RECORDING_HEADERS.stream]: streamId, [RECORDING_HEADERS.kind]: kind });
      const start = Buffer.from(JSON.stringify({ session_id: grant.sessionId }));
      if (!bus.publishRaw(subject, start, headers('start'))) {
        log.warn('a shell stream on this node goes unrecorded: the cluster bus is away', { session_id: grant.sessionId });
      }
      let parts: Buffer[] = [];
      let size = 0;
      let timer: NodeJS.Timeout | undefined;
      let lost = 0;
      const flush = () => {
        clearTimeout(timer);
        timer = undefined;
        if (size === 0) return;
        if (!bus.publishRaw(subject, Buffer.concat(parts, size), headers('frames'))) lost += size;
        parts = [];
        size = 0;
      };
      const push = (b: Buffer) => {
        parts.push(b);
        size += b.length;
        if (size >= FLUSH_BYTES) flush();
        else timer ??= setTimeout(flush, FLUSH_MS);
      };
      const tap = (side: number): FrameTap => ({
        frame(fin, opcode, length) {
          const b = Buffer.allocUnsafe(8);
          b[0] = side;
          b[1] = KIND.frame;
          b[2] = fin ? 1 : 0;
          b[3] = opcode;
          b.writeUInt32BE(length, 4);
          push(b);
        },
        payload(slice) {
          const b = Buffer.allocUnsafe(6);
          b[0] = side;
          b[1] = KIND.payload;
          b.writeUInt32BE(slice.length, 2);
          push(b);
          push(Buffer.from(slice)); // the splice reuses its buffers
        },
      });
      return {
        fromClient: tap(SIDE.client),
        fromDevice: tap(SIDE.device),
        end() {
          flush();
          bus.publishRaw(subject, Buffer.alloc(0), headers('end'));
          if (lost > 0) log.warn('part of a shell recording was lost while the cluster bus was away', { session_id: grant.sessionId, lost_bytes: lost });
        },
      };
    },
  };
}

/**
 * The control node's side: recordings of streams on edges, written by the local recorder.
 * `grantOf` answers the grant of a session the node may record (a shell session that is open and
 * whose stream the control node granted to that node), or undefined.
 */
export function receiveRecordings(bus: Bus, recorder: StreamRecorder, log: Logger, grantOf: (node: string, sessionId: string) => StreamGrant | undefined) {
  /** By node and stream id: a node names only its own streams. */
  const open = new Map<string, { recording: StreamRecording; node: string }>();
  const perNode = new Map<string, number>();
  const keyOf = (node: string, streamId: string) => `${node}\n${streamId}`;

  function forget(key: string): void {
    const entry = open.get(key);
    if (!entry) return;
    open.delete(key);
    const n = (perNode.get(entry.node) ?? 1) - 1;
    if (n > 0) perNode.set(entry.node, n);
    else perNode.delete(entry.node);
  }

  function replay(recording: StreamRecording, data: Buffer): void {
    let at = 0;
    while (at + 2 <= data.length) {
      const tap = data[at] === SIDE.client ? recording.fromClient : recording.fromDevice;
      if (data[at + 1] === KIND.frame) {
        if (at + 8 > data.length) break;
        tap.frame(data[at + 2] === 1, data[at + 3]!, data.readUInt32BE(at + 4));
        at += 8;
      } else {
        if (at + 6 > data.length) break;
        const n = data.readUInt32BE(at + 2);
        if (at + 6 + n > data.length) break;
        tap.payload(data.subarray(at + 6, at + 6 + n));
        at += 6 + n;
      }
    }
    if (at !== data.length) log.warn('a recording batch from an edge was cut short; recorded what it held');
  }

  function start(node: string, streamId: string, buf: Buffer): void {
    let sessionId: string;
    try {
      const parsed = recordingStart.safeParse(JSON.parse(buf.toString('utf8')));
      if (!parsed.success) return;
      sessionId = parsed.data.session_id;
    } catch {
      return;
    }
    const key = keyOf(node, streamId);
    const grant = grantOf(node, sessionId);
    if (!grant || open.has(key) || (perNode.get(node) ?? 0) >= MAX_OPEN_PER_NODE) {
      log.warn('refused a recording from a node: not a shell stream it was granted, or too many at once', { node, session_id: sessionId });
      return;
    }
    const recording = recorder.start(grant, streamId);
    if (!recording) return;
    open.set(key, { recording, node });
    perNode.set(node, (perNode.get(node) ?? 0) + 1);
  }

  bus.onRawNode(CONTROL_VERBS.recording, (node: string, data: Uint8Array, headers: MsgHdrs | undefined) => {
    const streamId = headers?.get(RECORDING_HEADERS.stream);
    const kind = headers?.get(RECORDING_HEADERS.kind);
    if (!streamId || streamId.length > 64) return;
    const buf = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
    const key = keyOf(node, streamId);
    if (kind === 'start') start(node, streamId, buf);
    else if (kind === 'frames') {
      const entry = open.get(key);
      if (entry) replay(entry.recording, buf);
    } else if (kind === 'end') {
      open.get(key)?.recording.end();
      forget(key);
    }
  });

  return {
    /** A node died: its recorded streams ended with it. */
    nodeGone(node: string): void {
      for (const [key, entry] of [...open]) {
        if (entry.node !== node) continue;
        entry.recording.end();
        forget(key);
      }
    },
    /** Ends every recording still open (the control node stops). */
    close(): void {
      for (const entry of open.values()) entry.recording.end();
      open.clear();
      perNode.clear();
    },
  };
}
