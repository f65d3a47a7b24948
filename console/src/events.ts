/**
 * @module Live changes from `GET /v1/events`, read with fetch so the token goes in the
 * Authorization header (EventSource cannot send one). Reconnects on its own; pages subscribe while
 * they are shown. What each event carries is `shared/api/events.ts`.
 */
import type { EndEvent, ServerEvent } from '../../shared/api/events';
import { apiStream } from './api';

/** An event of the stream: an agent's presence, a session opening or closing, or its end. */
export type LiveEvent = ServerEvent | EndEvent;

const listeners = new Set<(e: LiveEvent) => void>();
let running: AbortController | undefined;

export function onLive(listener: (e: LiveEvent) => void): () => void {
  listeners.add(listener);
  return () => void listeners.delete(listener);
}

async function readEvents(signal: AbortSignal): Promise<void> {
  const res = await apiStream('/v1/events', signal);
  if (!res.ok || !res.body) throw new Error(`events: HTTP ${res.status}`);
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const event = /^event: (.*)$/m.exec(block)?.[1];
      const data = /^data: (.*)$/m.exec(block)?.[1];
      if (!event || data === undefined) continue;
      try {
        const parsed = { event, data: JSON.parse(data) } as LiveEvent;
        for (const l of listeners) l(parsed);
      } catch {
        // a line that is not JSON: skip it
      }
    }
  }
}

/** Starts listening (once); stops with `stopLive`. */
export function startLive(): void {
  if (running) return;
  const controller = new AbortController();
  running = controller;
  void (async () => {
    let wait = 1000;
    while (!controller.signal.aborted) {
      try {
        await readEvents(controller.signal);
        wait = 1000;
      } catch {
        // dropped or refused: try again, a little later each time
      }
      if (controller.signal.aborted) return;
      await new Promise((r) => setTimeout(r, wait));
      wait = Math.min(wait * 2, 15_000);
    }
  })();
}

export function stopLive(): void {
  running?.abort();
  running = undefined;
}
