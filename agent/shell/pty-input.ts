/**
 * @module Keystrokes into the PTY. node-pty's `write` goes through libuv's thread pool, which
 * costs ~100 µs per keystroke here (direct PTY echo: 150 µs p50 through `write`, 30–90 µs with a
 * direct write). Input is written to the PTY's descriptor at once; when the PTY's input buffer is
 * full (a large paste into a program that does not read) the rest waits, in order, and the caller
 * stops reading the client until it has gone in.
 */
import { writeSync } from 'node:fs';
import type { IPty } from 'node-pty';

const RETRY_MS = 2;

export interface PtyInput {
  write(data: Buffer): void;
  close(): void;
}

export function createPtyInput(term: IPty, blocked: () => void, drained: () => void): PtyInput {
  // The master descriptor of node-pty's UnixTerminal; without it, fall back to its own write.
  const fd = (term as unknown as { _fd?: unknown })._fd;
  if (typeof fd !== 'number') return { write: (data) => term.write(data), close() {} };

  const queue: Buffer[] = [];
  let timer: NodeJS.Timeout | undefined;
  let closed = false;

  function flush(): void {
    timer = undefined;
    while (queue.length > 0 && !closed) {
      const head = queue[0]!;
      let written: number;
      try {
        written = writeSync(fd as number, head);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'EAGAIN') {
          timer = setTimeout(flush, RETRY_MS);
          return;
        }
        queue.length = 0; // the terminal is gone (EIO): nothing more will go in
        break;
      }
      if (written < head.length) {
        queue[0] = head.subarray(written);
        timer = setTimeout(flush, RETRY_MS);
        return;
      }
      queue.shift();
    }
    drained();
  }

  return {
    write(data) {
      if (closed) return;
      queue.push(data);
      if (timer) return; // already waiting for room: keep the order
      flush();
      if (queue.length > 0) blocked();
    },
    close() {
      closed = true;
      clearTimeout(timer);
      queue.length = 0;
    },
  };
}
