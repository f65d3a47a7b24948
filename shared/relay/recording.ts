/**
 * @module How the relay lets a recorder see a session's stream (the relay never imports the
 * API; the composition root wires the API's recorder in). A tap sees each data
 * frame as the relay passes it on: the header, then the payload slices, at once and in order;
 * it must return at once and never hold the stream up.
 */
import type { StreamGrant } from '../protocol/session-stream';

/** Sees the data frames going one way: each header, then its payload slices. */
export interface FrameTap {
  frame(fin: boolean, opcode: number, length: number): void;
  /** A view of the relay's read buffer, valid only during the call (the relay reads into it again): copy what you keep. */
  payload(slice: Buffer): void;
}

/** The recording of one stream of a session. */
export interface StreamRecording {
  /** Frames from the client: keystrokes (binary) and resize messages (text). */
  fromClient: FrameTap;
  /** Frames from the device: the terminal's output. */
  fromDevice: FrameTap;
  /** The stream ended. */
  end(): void;
}

/** Starts recordings of the streams that are recorded (the API's recorder; in a cluster, the link to it). */
export interface StreamRecorder {
  /** A recording of the stream `streamId` of the session `grant` admits to, or undefined when it is not recorded. */
  start(grant: StreamGrant, streamId: string): StreamRecording | undefined;
}
