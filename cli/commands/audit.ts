/**
 * @module `tether audit`: the audit log of changes to who can do what (logins, users, tokens,
 * devices; administrators), or with `--sessions` the remote-access audit (docs/http-api.md, audit
 * log; docs/cli.md). Newest first, as a table or `--json`.
 */
import type { AuditLogEvent } from '../../shared/api/audit';
import type { AuditEvent } from '../../shared/api/sessions';
import type { Context } from '../context';
import { usageError } from '../errors';
import { printJson, table } from '../output';

export interface AuditFlags {
  sessions?: boolean;
  event?: string;
  actor?: string;
  target?: string;
  since?: string;
  until?: string;
  session?: string;
  device?: string;
  limit?: number;
  json?: boolean;
}

const UNITS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 };
const shortTime = (iso: string) => iso.replace(/\.\d+Z$/, 'Z');
/** Stored text may hold what anyone typed (a username tried at login): no escape reaches the terminal. */
const printable = (text: string) => text.replace(/[\u0000-\u001f\u007f-\u009f]/g, '?');

/** `WHEN` as the API takes it: an ISO 8601 date-time, or a span ago (`90s`, `30m`, `12h`, `7d`). */
export function parseWhen(flag: string, value: string, now: number): string {
  const span = /^(\d{1,6})([smhd])$/.exec(value);
  if (span) return new Date(now - Number(span[1]) * UNITS[span[2]!]! * 1000).toISOString();
  const at = Date.parse(value);
  if (/^\d{4}-\d{2}-\d{2}/.test(value) && !Number.isNaN(at)) return new Date(at).toISOString();
  throw usageError(`${flag} must be a date-time (2026-11-26T09:00:00Z, 2026-11-26) or a span ago (30m, 12h, 7d); got ${value}`);
}

/** `k=v k2=v2`, compact, for the DETAILS column. */
function detailsText(details: Record<string, unknown>): string {
  const parts = Object.entries(details).map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`);
  return parts.length > 0 ? printable(parts.join(' ')) : '-';
}

/** Refuses the options that belong to the other listing. */
function checkFlags(flags: AuditFlags): void {
  const wrong = flags.sessions
    ? ([
        ['--target', flags.target],
        ['--until', flags.until],
      ] as const)
    : ([
        ['--session', flags.session],
        ['--device', flags.device],
      ] as const);
  for (const [name, value] of wrong) {
    if (value !== undefined) throw usageError(flags.sessions ? `${name} is not an option of the sessions' audit` : `${name} needs --sessions`);
  }
}

export async function audit(ctx: Context, flags: AuditFlags): Promise<void> {
  checkFlags(flags);
  const limit = flags.limit ?? 50;
  const q = new URLSearchParams({ per_page: String(limit) });
  const now = Date.now();
  const set = (key: string, value: string | undefined) => value !== undefined && q.set(key, value);
  set('event', flags.event);
  set('actor', flags.actor);
  set('since', flags.since === undefined ? undefined : parseWhen('--since', flags.since, now));
  const rows = flags.sessions ? await sessionEvents(ctx, q, flags) : await changeEvents(ctx, q, flags, now);
  if (rows === undefined) return;
  if (rows === 0) ctx.out.stdout('no events\n');
  else if (rows === limit) ctx.notice(`showing the newest ${limit}; --limit (up to 200) or --since shows others`);
}

/** The audit log of changes; the number of rows shown (undefined: printed as JSON). */
async function changeEvents(ctx: Context, q: URLSearchParams, flags: AuditFlags, now: number): Promise<number | undefined> {
  if (flags.target !== undefined) q.set('target', flags.target);
  if (flags.until !== undefined) q.set('until', parseWhen('--until', flags.until, now));
  const events = await ctx.api().request<AuditLogEvent[]>('GET', `/v1/audit/events?${q}`);
  if (flags.json) return void printJson(ctx.out, events);
  const rows = events.map((e) => ({
    at: shortTime(e.at),
    event: e.count > 1 ? `${e.event} (x${e.count})` : e.event,
    actor: printable(e.actor),
    target: printable(`${e.target.kind}:${e.target.id}`),
    outcome: e.outcome,
    from: e.source_ip ?? '-',
    details: detailsText(e.details),
  }));
  if (rows.length > 0) ctx.out.stdout(table(rows, ['at', 'event', 'actor', 'target', 'outcome', 'from', 'details']));
  return rows.length;
}

/** The remote-access audit; the number of rows shown (undefined: printed as JSON). */
async function sessionEvents(ctx: Context, q: URLSearchParams, flags: AuditFlags): Promise<number | undefined> {
  if (flags.session !== undefined) q.set('session_id', flags.session);
  if (flags.device !== undefined) q.set('device_id', flags.device);
  const events = await ctx.api().request<AuditEvent[]>('GET', `/v1/audit/remote-access?${q}`);
  if (flags.json) return void printJson(ctx.out, events);
  const rows = events.map((e) => ({
    at: shortTime(e.at),
    event: e.event,
    // A job's events name the job and no session, device or protocol; an access request's, the request and its device.
    session: e.session_id ?? e.job_id ?? e.request_id ?? '-',
    device: e.device_id ?? '-',
    protocol: e.protocol ?? '-',
    actor: e.actor,
    reason: e.reason ?? '-',
  }));
  if (rows.length > 0) ctx.out.stdout(table(rows, ['at', 'event', 'session', 'device', 'protocol', 'actor', 'reason']));
  return rows.length;
}
