/**
 * @module The terminal page's xterm.js wiring: copy and paste keys, keystrokes and resizes to
 * whichever stream is current (a reconnect replaces it), and output with flow control (xterm's
 * write callbacks count what is not drawn yet; past a high-water mark the device is asked to
 * pause the terminal, and to resume once drawn), so `yes` never freezes the page.
 */
import type { Terminal } from '@xterm/xterm';
import { frames } from '../../../shared/protocol/session-stream';
import type { SessionStream } from '../session-stream';

/** Output handed to xterm but not drawn yet: above HIGH the device pauses, below LOW it resumes. */
const HIGH = 256 * 1024;
const LOW = 32 * 1024;

/** Sends what is typed and the terminal's size to `current()`; Ctrl+Shift+C copies, Ctrl+Shift+V pastes. */
export function wireInput(term: Terminal, current: () => SessionStream | undefined): void {
  const encoder = new TextEncoder();
  term.attachCustomKeyEventHandler((e) => {
    if (e.type !== 'keydown' || !e.ctrlKey || !e.shiftKey) return true;
    if (e.code === 'KeyC') {
      void navigator.clipboard?.writeText(term.getSelection());
      return false;
    }
    if (e.code === 'KeyV') {
      void navigator.clipboard?.readText().then((text) => term.paste(text));
      return false;
    }
    return true;
  });
  term.onData((data) => current()?.sendBytes(encoder.encode(data)));
  term.onBinary((data) => current()?.sendBytes(Uint8Array.from(data, (c) => c.charCodeAt(0))));
  term.onResize(({ cols, rows }) => current()?.sendJson(frames.resize(cols, rows)));
}

/** Writes `stream`'s output into `term`, pausing the device while xterm falls behind. */
export function pipeOutput(stream: SessionStream, term: Terminal): void {
  let pending = 0;
  let paused = false;
  stream.onBinary((data) => {
    pending += data.length;
    term.write(data, () => {
      pending -= data.length;
      if (paused && pending < LOW) {
        paused = false;
        stream.sendJson({ type: 'resume' });
      }
    });
    if (!paused && pending > HIGH) {
      paused = true;
      stream.sendJson({ type: 'pause' });
    }
  });
}
