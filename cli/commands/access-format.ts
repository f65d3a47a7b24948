/**
 * @module How `tether access` reads and writes time: durations as people type them (`90s`,
 * `30m`, `8h`, `2d`, or whole seconds) and as they read them back (`1h30m`), and the clock time a
 * grant ends at, in this machine's time zone (`14:05`, with the date when it is not today).
 */
import type { AccessRequest } from '../../shared/api/access';
import { usageError } from '../errors';

const UNITS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 };

/** `value` (`90s`, `30m`, `1h`, `2d` or seconds) in seconds, from `min` to `max`; else a usage error. */
export function parseDuration(flag: string, value: string, min: number, max: number): number {
  const m = /^(\d{1,7})([smhd]?)$/.exec(value.trim());
  const seconds = m ? Number(m[1]) * UNITS[m[2] || 's']! : NaN;
  if (!(seconds >= min && seconds <= max)) {
    throw usageError(`${flag} must be a duration from ${durationText(min)} to ${durationText(max)} (90s, 30m, 8h, 2d, or seconds); got ${value}`);
  }
  return seconds;
}

/** Seconds as the largest two units that say them: `45s`, `1m30s`, `8h`, `1d12h`. */
export function durationText(seconds: number): string {
  let rest = Math.max(0, Math.round(seconds));
  const parts: string[] = [];
  for (const [unit, size] of [
    ['d', 86_400],
    ['h', 3600],
    ['m', 60],
    ['s', 1],
  ] as const) {
    if (rest >= size || (unit === 's' && parts.length === 0)) {
      parts.push(`${Math.floor(rest / size)}${unit}`);
      rest %= size;
    }
  }
  return parts.slice(0, 2).join('');
}

const two = (n: number) => String(n).padStart(2, '0');

/** `14:05` in the local time zone, `2026-11-28 14:05` when not today (`now`'s day). */
export function clockTime(iso: string, now = new Date()): string {
  const t = new Date(iso);
  const hm = `${two(t.getHours())}:${two(t.getMinutes())}`;
  const sameDay = t.getFullYear() === now.getFullYear() && t.getMonth() === now.getMonth() && t.getDate() === now.getDate();
  return sameDay ? hm : `${t.getFullYear()}-${two(t.getMonth() + 1)}-${two(t.getDate())} ${hm}`;
}

/** An ISO time without its fraction, `-` for none: the tables' form. */
export const shortTime = (iso: string | null | undefined): string => (iso ? iso.replace(/\.\d+Z$/, 'Z') : '-');

/** Stored text holds what anyone typed (a reason): no escape reaches the terminal. */
export const printable = (text: string): string => text.replace(/[\u0000-\u001f\u007f-\u009f]/g, '?');

/** The one time that matters for a request now: until when it waits, its grant runs, or when it was revoked. */
export function untilOf(r: AccessRequest): string | null {
  if (r.status === 'pending') return r.expires_at;
  if (r.status === 'revoked') return r.revoked_at;
  if (r.status === 'approved' || r.status === 'ended') return r.ends_at;
  return null;
}

/** Where a request is for, in words: `shell, file-transfer on cam-7`. */
export const onText = (r: AccessRequest): string => `${r.protocols.join(', ')} on ${r.device_id}`;

/** What a request asks for, in words: `shell, file-transfer on cam-7 for 1h`. */
export const whatText = (r: AccessRequest): string => `${onText(r)} for ${durationText(r.duration_seconds)}`;

/**
 * How a decided request ended, as `--wait` says it: `approved by bob until 14:05 (reason)`,
 * `denied by bob: reason`, `expired`, `canceled`, … (one line).
 */
export function decisionText(r: AccessRequest): string {
  const why = (reason: string | null) => (reason ? printable(reason) : '');
  switch (r.status) {
    case 'approved':
      return `approved by ${r.reviewed_by} until ${clockTime(r.ends_at!)} (${why(r.review_reason)})`;
    case 'denied':
      return `denied by ${r.reviewed_by}: ${why(r.review_reason)}`;
    case 'expired':
      return `expired: nobody approved or denied it by ${clockTime(r.expires_at)}`;
    case 'canceled':
      return 'canceled';
    case 'revoked':
      return `approved by ${r.reviewed_by}, then revoked by ${r.revoked_by}${r.revoke_reason ? `: ${why(r.revoke_reason)}` : ''}`;
    case 'ended':
      return `approved by ${r.reviewed_by}; the grant ended at ${clockTime(r.ends_at!)}`;
    default:
      return r.status;
  }
}
