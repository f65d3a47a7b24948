/**
 * @module Sizing V8's young generation for relaying. A node that splices streams allocates a
 * small wrapper per chunk that dies at once; with the young generation at its initial 1 MiB it
 * scavenges hundreds of times a second, and a copy through a fresh `tether broker` cost half as
 * much CPU again as through `tether server`, whose start-up (modules, migrations) had grown it
 * (bench `cluster`: 1.5 vs 0.9 CPU seconds per GiB). `--min-semi-space-size=16` at start fixes it
 * but needs the process to be started with it; instead, at start a burst of objects that
 * outlive a few scavenges makes V8 grow the young generation the way that start-up does.
 */
import { getHeapSpaceStatistics } from 'node:v8';

/** The young generation V8 grows to by default on 64-bit (two 16 MiB semi-spaces). */
const TARGET_BYTES = 32 * 1024 * 1024;
const newSpace = () => getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')?.space_size ?? TARGET_BYTES;

/** Grows the young generation to its usual size; a few tens of milliseconds, once. */
export function growYoungGeneration(): void {
  let kept: Array<{ i: number; pair: number[] }> = [];
  for (let i = 0; i < 2_000_000; i++) {
    kept.push({ i, pair: [i, i] });
    if (kept.length >= 200_000) kept = []; // survivors enough to grow it; garbage after
    if (i % 10_000 === 0 && newSpace() >= TARGET_BYTES) break;
  }
}
