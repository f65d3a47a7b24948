/**
 * @module A frame tap (`shared/relay/recording.ts`) that turns the frames one way of a stream into what
 * a recording keeps: binary payload slices as they pass (terminal bytes, never held whole) and
 * small text messages whole (resize, exit). A text message over `MAX_TEXT` is not a message a
 * terminal sends and is skipped.
 */
import type { FrameTap } from '../../shared/relay/recording';

const MAX_TEXT = 4096;
const TEXT = 1;
const CONTINUATION = 0;

export function messageTap(onBinary: (slice: Buffer) => void, onText: (text: Buffer) => void): FrameTap {
  let kind: 'text' | 'binary' = 'binary';
  let parts: Buffer[] = [];
  let size = 0;
  let fin = false;
  let left = 0;

  function endOfFrame(): void {
    if (!fin || kind !== 'text') return;
    if (size <= MAX_TEXT) onText(parts.length === 1 ? parts[0]! : Buffer.concat(parts));
    parts = [];
    size = 0;
  }

  return {
    frame(frameFin, opcode, length) {
      if (opcode !== CONTINUATION) {
        kind = opcode === TEXT ? 'text' : 'binary';
        parts = [];
        size = 0;
      }
      fin = frameFin;
      left = length;
      if (length === 0) endOfFrame();
    },
    payload(slice) {
      left -= slice.length;
      if (kind === 'binary') onBinary(slice);
      else {
        size += slice.length;
        // A copy: the slice's buffer is the socket's, and a message is at most a few bytes.
        if (size <= MAX_TEXT) parts.push(Buffer.from(slice));
      }
      if (left === 0) endOfFrame();
    },
  };
}
