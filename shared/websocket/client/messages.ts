/**
 * @module The messages a WebSocket client reads, as a session stream needs them: text messages
 * whole (their pieces kept until the last, then checked as UTF-8), binary payloads handed on in
 * the slices the socket read, their message boundaries not kept (no protocol gives them a meaning).
 */
import { isUtf8 } from 'node:buffer';
import { OPCODE } from '../frames/wire';

export interface MessageSink {
  text(text: string): void;
  binary(slice: Buffer): void;
  /** A text message is not UTF-8 (1007). */
  invalid(code: number, reason: string): void;
}

export function createMessageReader(sink: MessageSink) {
  /** The kind of message being read, and a text message's pieces so far. */
  let message: 'text' | 'binary' | undefined;
  let textParts: Buffer[] = [];
  /** Whether the frame being read ends its message, and how much of its payload is still to come. */
  let frameFin = false;
  let frameLeft = 0;

  function endMessage(): void {
    if (message === 'text') {
      const text = textParts.length === 1 ? textParts[0]! : Buffer.concat(textParts);
      textParts = [];
      if (!isUtf8(text)) return sink.invalid(1007, 'text is not UTF-8');
      sink.text(text.toString('utf8'));
    }
    message = undefined;
  }

  return {
    /** A data frame's header. */
    frame(fin: boolean, opcode: number, length: number): void {
      if (opcode !== OPCODE.continuation) {
        message = opcode === OPCODE.text ? 'text' : 'binary';
        textParts = [];
      }
      frameFin = fin;
      frameLeft = length;
      if (length === 0 && fin) endMessage();
    },
    /** The next slice of the frame's payload. */
    payload(slice: Buffer): void {
      // Read buffers are fresh for every read, so a slice may be kept (a text message's pieces).
      if (message === 'text') textParts.push(slice);
      else sink.binary(slice);
      frameLeft -= slice.length;
      if (frameLeft === 0 && frameFin) endMessage();
    },
  };
}
