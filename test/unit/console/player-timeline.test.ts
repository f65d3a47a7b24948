/** The console player's timeline: long pauses shortened, and what a seek hands the terminal. */
import { describe, expect, it } from 'vitest';
import { batched, clockText, IDLE_SECONDS, lengthOf, nextAfter, timeline } from '../../../console/src/pages/player-timeline';
import type { CastEvent } from '../../../shared/asciicast';

const cast: CastEvent[] = [
  [0.5, 'o', 'a'],
  [0.6, 'i', 'typed'], // input is not shown
  [1.0, 'o', 'b'],
  [31.0, 'o', 'c'], // 30 s idle: plays as IDLE_SECONDS
  [31.5, 'r', '100x30'],
  [31.5, 'm', 'marker'],
  [32.0, 'o', 'd'],
  [32.5, 'r', 'garbage'],
];

describe('the player timeline', () => {
  it('keeps output and resizes, shortening pauses over the idle limit', () => {
    expect(timeline(cast)).toEqual([
      { at: 0.5, write: 'a' },
      { at: 1.0, write: 'b' },
      { at: 1.0 + IDLE_SECONDS, write: 'c' },
      { at: 1.5 + IDLE_SECONDS, cols: 100, rows: 30 },
      { at: 2.0 + IDLE_SECONDS, write: 'd' },
    ]);
    expect(lengthOf(timeline(cast))).toBe(2.0 + IDLE_SECONDS);
    expect(lengthOf([])).toBe(0);
  });

  it('finds what is on the screen at a moment, and joins it into few writes', () => {
    const events = timeline(cast);
    expect(nextAfter(events, 0)).toBe(0);
    expect(nextAfter(events, 1.0)).toBe(2); // an event at exactly t is shown
    expect(nextAfter(events, 99)).toBe(events.length);
    expect(batched(events, 3)).toEqual([{ at: 1.0 + IDLE_SECONDS, write: 'abc' }]);
    expect(batched(events, events.length)).toEqual([
      { at: 1.5 + IDLE_SECONDS, write: 'abc' },
      { at: 1.5 + IDLE_SECONDS, cols: 100, rows: 30 },
      { at: 2.0 + IDLE_SECONDS, write: 'd' },
    ]);
  });

  it('shows the clock as m:ss', () => {
    expect(clockText(0)).toBe('0:00');
    expect(clockText(61.9)).toBe('1:01');
    expect(clockText(-3)).toBe('0:00');
  });
});
