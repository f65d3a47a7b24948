/**
 * @module The player's timeline: a recording's output and resize events on a clock whose long
 * pauses are shortened (nobody wants to watch a minute of an idle prompt), and what the screen
 * must be handed to show the recording at any moment of it, for seeking.
 */
import type { CastEvent } from '../../../shared/asciicast';

/** Pauses longer than this (seconds) play, and take the seek bar, as this long. */
export const IDLE_SECONDS = 2;

/** One event the screen acts on: output to write, or a new size. */
export type ScreenEvent = { at: number; write: string } | { at: number; cols: number; rows: number };

/** The events that change the screen, each at its time on the shortened clock, in order. */
export function timeline(events: readonly CastEvent[]): ScreenEvent[] {
  const out: ScreenEvent[] = [];
  let last = 0;
  let clock = 0;
  for (const [t, code, data] of events) {
    clock += Math.min(Math.max(t - last, 0), IDLE_SECONDS);
    last = Math.max(t, last);
    if (code === 'o') out.push({ at: clock, write: data });
    else if (code === 'r') {
      const [cols, rows] = data.split('x').map(Number);
      if (cols && rows && cols <= 1000 && rows <= 1000) out.push({ at: clock, cols, rows });
    }
  }
  return out;
}

/** How long the timeline plays (seconds on the shortened clock). */
export const lengthOf = (events: readonly ScreenEvent[]) => events.at(-1)?.at ?? 0;

/** The index of the first event after `t`: everything before it is on the screen at `t`. */
export function nextAfter(events: readonly ScreenEvent[], t: number): number {
  let lo = 0;
  let hi = events.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (events[mid]!.at <= t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * The events before `end` as few steps as possible: runs of output joined into one write, each
 * resize on its own, so a seek hands the terminal a few large writes instead of thousands.
 */
export function batched(events: readonly ScreenEvent[], end: number): ScreenEvent[] {
  const out: ScreenEvent[] = [];
  let text = '';
  for (let i = 0; i < end; i++) {
    const e = events[i]!;
    if ('write' in e) {
      text += e.write;
      continue;
    }
    if (text) out.push({ at: e.at, write: text });
    text = '';
    out.push(e);
  }
  if (text) out.push({ at: events[end - 1]!.at, write: text });
  return out;
}

/** `m:ss` */
export function clockText(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds));
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}
