/**
 * @module A frame tap (`shared/relay/recording.ts`) that turns the frames one way of a stream into what
 * a recording keeps: binary payload slices as they pass (terminal bytes, never held whole) and
 * small text messages whole (resize, exit, an exec stream's stderr and request). A text message over
 * `MAX_TEXT` is not one a terminal sends: only its first `MAX_TEXT` bytes are kept and passed on
 * (cut, it is not JSON: a reader can name it, never take it for a whole message).
 */
import type { FrameTap } from '../../shared/relay/recording';

/** The most bytes of a text message kept (an exec stream's stderr messages fit: EXEC_STDERR_CHUNK). */
export const MAX_TEXT = 4096;
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
    onText(parts.length === 1 ? parts[0]! : Buffer.concat(parts));
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
        // A copy: the slice's buffer is the socket's. Only what is kept (MAX_TEXT) is copied.
        const room = MAX_TEXT - (size - slice.length);
        if (room > 0) parts.push(Buffer.from(slice.subarray(0, room)));
      }
      if (left === 0) endOfFrame();
    },
  };
}
