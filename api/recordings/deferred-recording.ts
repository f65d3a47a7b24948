/**
 * @module The recording of a stream whose session's recording is still starting (its session is
 * read and its row written, asynchronously). The relay's taps must return at once and never hold
 * the stream up, so what passes meanwhile is kept, in order, and handed to the recording once it
 * has started; or dropped when the stream turns out not to be recorded.
 */
import type { FrameTap, StreamRecording } from '../../shared/relay/recording';

/** The most kept while waiting: past it the stream goes on unrecorded (never the case in practice: the wait is a few statements). */
const HELD_MAX = 16 * 1024 * 1024;

type Tap = 'fromClient' | 'fromDevice';

/**
 * A stream's recording now, for the one `open` makes of what `started` resolves to (undefined:
 * the stream is not recorded). `started` must never reject. Recordings of the same `started`
 * open in the order they were made, before anything else that waits on it.
 */
export function deferredRecording<T>(started: Promise<T | undefined>, open: (value: T) => StreamRecording): StreamRecording {
  let target: StreamRecording | undefined;
  let held: Array<(r: StreamRecording) => void> | undefined = [];
  let heldBytes = 0;

  function pass(call: (r: StreamRecording) => void, bytes = 0): void {
    if (target) return call(target);
    if (!held) return;
    heldBytes += bytes;
    if (heldBytes > HELD_MAX) held = undefined;
    else held.push(call);
  }

  void started.then((value) => {
    if (value === undefined) {
      held = undefined;
      return;
    }
    const recording = open(value);
    // Too much waited: the recording of this stream ends before anything of it.
    if (!held) return recording.end();
    for (const call of held) call(recording);
    held = undefined;
    target = recording;
  });

  const tap = (side: Tap): FrameTap => ({
    frame: (fin, opcode, length) => pass((r) => r[side].frame(fin, opcode, length)),
    payload(slice) {
      if (target) return target[side].payload(slice);
      // A copy, as the message tap makes: the slice is a view of the socket's buffer.
      const copy = Buffer.from(slice);
      pass((r) => r[side].payload(copy), copy.length);
    },
  });

  let ended = false;
  return {
    fromClient: tap('fromClient'),
    fromDevice: tap('fromDevice'),
    end() {
      if (ended) return;
      ended = true;
      pass((r) => r.end());
    },
  };
}
