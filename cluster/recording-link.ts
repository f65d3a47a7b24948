/**
 * @module Shell recordings of streams spliced on an edge node: the edge's taps pack the frames
 * they see into batches (at most every 20 ms or 64 KiB) and publish them to the control node,
 * whose recorder writes them as if the stream ran there. Only the frames of recorded streams
 * travel (shell sessions); file copies and forwarded ports never do.
 *
 * A batch is a run of records: `[side][kind]` then, for a frame header, `fin` (1 byte), `opcode`
 * (1 byte), `length` (4 bytes, big-endian); for a payload slice, its length (4 bytes) and bytes.
 */
import type { MsgHdrs } from '@nats-io/transport-node';
import { RECORDING_HEADERS, recordingStart, SUBJECTS } from '../shared/cluster';
import type { Logger } from '../shared/log';
import type { FrameTap, RecordingPort, StreamRecording } from '../shared/recording';
import type { StreamGrant } from '../shared/session-stream';
import type { Bus } from './bus';

const FLUSH_MS = 20;
const FLUSH_BYTES = 64 * 1024;
const SIDE = { client: 0, device: 1 } as const;
const KIND = { frame: 0, payload: 1 } as const;

/** The edge's recording port: frames go to the control node. */
export function publishedRecordings(bus: Bus, nodeId: string, log: Logger): RecordingPort {
  return {
    start(grant: StreamGrant, streamId: string): StreamRecording | undefined {
      // Whether shells are recorded at all is the control node's setting: it drops what it does not record.
      if (grant.protocol !== 'shell') return undefined;
      const headers = (kind: string) => ({ [RECORDING_HEADERS.stream]: streamId, [RECORDING_HEADERS.kind]: kind, [RECORDING_HEADERS.node]: nodeId });
      const start = Buffer.from(JSON.stringify({ grant }));
      if (!bus.publishRaw(SUBJECTS.recording, start, headers('start'))) {
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
        if (!bus.publishRaw(SUBJECTS.recording, Buffer.concat(parts, size), headers('frames'))) lost += size;
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
          bus.publishRaw(SUBJECTS.recording, Buffer.alloc(0), headers('end'));
          if (lost > 0) log.warn('part of a shell recording was lost while the cluster bus was away', { session_id: grant.sessionId, lost_bytes: lost });
        },
      };
    },
  };
}

/** The control node's side: recordings of streams on edges, written by the local recorder. */
export function receiveRecordings(bus: Bus, port: RecordingPort, log: Logger) {
  const open = new Map<string, { recording: StreamRecording; node: string }>();

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

  bus.onRaw(SUBJECTS.recording, (data: Uint8Array, headers: MsgHdrs | undefined) => {
    const streamId = headers?.get(RECORDING_HEADERS.stream);
    const kind = headers?.get(RECORDING_HEADERS.kind);
    const node = headers?.get(RECORDING_HEADERS.node) ?? '';
    if (!streamId) return;
    const buf = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
    if (kind === 'start') {
      let grant: StreamGrant;
      try {
        const parsed = recordingStart.safeParse(JSON.parse(buf.toString('utf8')));
        if (!parsed.success) return;
        grant = parsed.data.grant;
      } catch {
        return;
      }
      const recording = port.start(grant, streamId);
      if (recording) open.set(streamId, { recording, node });
    } else if (kind === 'frames') {
      const entry = open.get(streamId);
      if (entry) replay(entry.recording, buf);
    } else if (kind === 'end') {
      open.get(streamId)?.recording.end();
      open.delete(streamId);
    }
  });

  return {
    /** A node died: its recorded streams ended with it. */
    nodeGone(nodeId: string): void {
      for (const [id, entry] of open) {
        if (entry.node !== nodeId) continue;
        entry.recording.end();
        open.delete(id);
      }
    },
    /** Ends every recording still open (the control node stops). */
    close(): void {
      for (const entry of open.values()) entry.recording.end();
      open.clear();
    },
  };
}
