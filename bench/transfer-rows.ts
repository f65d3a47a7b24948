/**
 * @module The rows of the transfer section (bench/transfer.ts): medians of repeated runs, ratio
 * rows with their targets, and the rows of the references, so the section's file keeps to the
 * measuring.
 */
import { median, ratioRow, round, type Result } from './lib';
import { NO_COMPILER } from './relay-chain';

export interface Repeated {
  value: number;
  runs: number[];
}

/** Runs `measure` `times` times in a row; per figure it returns, the median and every run's value. */
export async function repeated<K extends string>(times: number, measure: () => Promise<Record<K, number>>): Promise<Record<K, Repeated>> {
  const all: Array<Record<K, number>> = [];
  for (let i = 0; i < times; i++) all.push(await measure());
  const figures = Object.keys(all[0]!) as K[];
  return Object.fromEntries(figures.map((k) => [k, { value: median(all.map((r) => r[k])), runs: all.map((r) => r[k]) }])) as Record<K, Repeated>;
}

/** A transfer row for a median, its runs rounded like its value. */
export function figure(name: string, m: Repeated, digits: number, unit: string, target: string, met: boolean | null): Result {
  return { section: 'transfer', name, value: round(m.value, digits), unit, target, met, runs: m.runs.map((r) => round(r, digits)) };
}

/** A transfer row for `a / b` (`ratioRow`). */
export const ratio = (name: string, a: number, b: number, bound?: { min?: number; max?: number }): Result => ratioRow('transfer', name, a, b, bound);

/** true when every check passed, false when one failed, null when none failed but some could not be made. */
export function allMet(checks: Array<boolean | null>): boolean | null {
  if (checks.includes(false)) return false;
  return checks.includes(null) ? null : true;
}

/** What one direction of `tether cp` is compared with, from the same interleaved run. */
export interface Way {
  way: 'from' | 'to';
  arrow: '↓' | '↑';
  rate: number;
  /** The raw Node TCP relay, three processes. */
  node: number;
  /** The C splice relay, three processes; undefined without a C compiler. */
  splice?: number;
  scp?: { direct: number; jumped: number };
}

/**
 * Issue 35's and 14's targets for one direction of `tether cp`: at least 0.8 of the raw Node
 * relay, 1.0 of direct scp and 1.5 of scp through the jump host (unchecked when there is no
 * sshd); the C relay's ratio reported beside them.
 */
export function cpTargets(w: Way): { checks: Array<boolean | null>; rows: Result[] } {
  const rows = [ratio(`tether cp ${w.way} / raw Node TCP relay ${w.arrow}`, w.rate, w.node, { min: 0.8 })];
  if (w.scp) {
    rows.push(ratio(`tether cp ${w.way} / scp ${w.way}`, w.rate, w.scp.direct, { min: 1.0 }));
    rows.push(ratio(`tether cp ${w.way} / scp -J ${w.way}`, w.rate, w.scp.jumped, { min: 1.5 }));
  }
  const checks = w.scp ? rows.map((r) => r.met) : [rows[0]!.met, null];
  if (w.splice !== undefined) rows.push(ratio(`tether cp ${w.way} / C splice relay ${w.arrow} (the physical limit)`, w.rate, w.splice));
  return { checks, rows };
}

/** The rows of the raw relays (rates and their process's CPU per GiB), or one skipped row for the C relay. */
export function referenceRows(size: string, of: string, m: Record<string, Repeated>, splice: boolean): Result[] {
  const rows: Result[] = [
    figure(`raw TCP relay in Node, 3 processes, ${size} ↓ (device to client)${of}`, m.nodeDown!, 0, 'MiB/s', 'reported', null),
    figure(`raw TCP relay in Node, 3 processes, ${size} ↑ (client to device)${of}`, m.nodeUp!, 0, 'MiB/s', 'reported', null),
    figure(`raw Node TCP relay process CPU per GiB ↓${of}`, m.nodeDownCpu!, 2, 'CPU s/GiB', 'reported', null),
    figure(`raw Node TCP relay process CPU per GiB ↑${of}`, m.nodeUpCpu!, 2, 'CPU s/GiB', 'reported', null),
  ];
  if (!splice)
    return [...rows, { section: 'transfer', name: `C splice relay, 3 processes: ${NO_COMPILER}`, value: 'skipped', unit: '-', target: '-', met: null }];
  return [
    ...rows,
    figure(`C splice relay, 3 processes, ${size} ↓ (the physical limit)${of}`, m.spliceDown!, 0, 'MiB/s', 'reported', null),
    figure(`C splice relay, 3 processes, ${size} ↑ (the physical limit)${of}`, m.spliceUp!, 0, 'MiB/s', 'reported', null),
    figure(`C splice relay process CPU per GiB ↓${of}`, m.spliceDownCpu!, 2, 'CPU s/GiB', 'reported', null),
    figure(`C splice relay process CPU per GiB ↑${of}`, m.spliceUpCpu!, 2, 'CPU s/GiB', 'reported', null),
  ];
}
