/** @module `tether session open | list | close | extend`. */
import { TTL_MAX_S, type ExtendSessionBody, type Session } from '../../shared/api/sessions';
import type { SessionProtocol } from '../../shared/protocol/control-channel';
import { ApiFailure } from '../api-client';
import type { Context } from '../context';
import { CliError } from '../errors';
import { formatBytes, formatDuration, printJson, table } from '../output';
import { openSession } from '../sessions';

export interface OpenFlags {
  protocol: SessionProtocol;
  ttl?: number;
  target?: string[];
  json?: boolean;
  replace?: boolean;
  waitOnline?: boolean;
}

export async function sessionOpen(ctx: Context, device: string, flags: OpenFlags): Promise<void> {
  const s = await openSession(ctx.api(), {
    device,
    protocol: flags.protocol,
    ttl: flags.ttl,
    targets: flags.target,
    replace: flags.replace,
    waitOnline: flags.waitOnline,
    notice: ctx.notice,
  });
  if (flags.json) return printJson(ctx.out, s);
  ctx.out.stdout(
    `opened ${s.session_id}: ${s.protocol}${s.targets ? ` to ${s.targets.join(', ')}` : ''} on ${s.device_id}, expires ${s.expires_at}\n` +
      // Only a token that may join is shown the stream's ticket (a sessions:read one is not).
      (s.websocket_url ? `websocket_url: ${s.websocket_url}\n` : ''),
  );
}

export interface ListFlags {
  device?: string;
  recorded?: boolean;
  status?: string;
  protocol?: string;
  json?: boolean;
}

const PAGE = 200;

export async function sessionList(ctx: Context, flags: ListFlags): Promise<void> {
  const q = new URLSearchParams({ per_page: String(PAGE) });
  if (flags.device) q.set('device_id', flags.device);
  if (flags.status) q.set('status', flags.status);
  if (flags.protocol) q.set('protocol', flags.protocol);
  if (flags.recorded) q.set('has_recording', 'true');
  const sessions = await ctx.api().request<Session[]>('GET', `/v1/remote-access/sessions?${q}`);
  if (flags.json) return printJson(ctx.out, sessions);
  if (sessions.length === 0) {
    ctx.out.stdout('no sessions\n');
    return;
  }
  ctx.out.stdout(
    table(
      sessions.map((s) => ({
        session: s.session_id,
        device: s.device_id,
        protocol: s.protocol,
        status: s.status === 'open' ? 'open' : `closed (${s.close_reason})`,
        'opened by': s.opened_by,
        opened: s.opened_at.replace(/\.\d+Z$/, 'Z'),
        until: (s.closed_at ?? s.expires_at).replace(/\.\d+Z$/, 'Z'),
        'to / from device': `${formatBytes(s.bytes_to_device)} / ${formatBytes(s.bytes_from_device)}`,
        recording: s.recording ? `${formatDuration(s.recording.duration_s)}${s.recording.truncated ? ' (truncated)' : ''}` : '-',
      })),
      ['session', 'device', 'protocol', 'status', 'opened by', 'opened', 'until', 'to / from device', 'recording'],
    ),
  );
  if (sessions.length === PAGE) ctx.notice(`showing the newest ${PAGE}; narrow with --device, --status or --protocol`);
}

export async function sessionClose(ctx: Context, sessionId: string, flags: { json?: boolean }): Promise<void> {
  let s: Session;
  try {
    s = await ctx.api().request<Session>('DELETE', `/v1/remote-access/sessions/${encodeURIComponent(sessionId)}`);
  } catch (err) {
    if (err instanceof ApiFailure && err.status === 404) throw new CliError(`no open session ${sessionId} that you may close`, err.code);
    throw err;
  }
  if (flags.json) return printJson(ctx.out, s);
  ctx.out.stdout(`closed ${s.session_id} (${formatBytes(s.bytes_to_device)} to, ${formatBytes(s.bytes_from_device)} from the device)\n`);
}

/** When `iso` is, from now: "in 1 h 5 min". */
function fromNow(iso: string): string {
  const s = Math.max(0, Math.round((Date.parse(iso) - Date.now()) / 1000));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  return `in ${h > 0 ? `${h} h ${m} min` : m > 0 ? `${m} min` : `${s} s`}`;
}

export async function sessionExtend(ctx: Context, sessionId: string, flags: { ttl: number; json?: boolean }): Promise<void> {
  let s: Session;
  try {
    const body: ExtendSessionBody = { ttl_seconds: flags.ttl };
    s = await ctx.api().request<Session>('POST', `/v1/remote-access/sessions/${encodeURIComponent(sessionId)}/extend`, body);
  } catch (err) {
    if (err instanceof ApiFailure && err.status === 404) throw new CliError(`no session ${sessionId} that you may extend`, err.code);
    if (err instanceof ApiFailure && err.status === 400) throw new CliError(err.body.details?.map((d) => d.message).join('\n') || err.body.message, err.code);
    throw err;
  }
  if (flags.json) return printJson(ctx.out, s);
  ctx.out.stdout(
    `extended ${s.session_id}: it now expires at ${s.expires_at.replace(/\.\d+Z$/, 'Z')} (${fromNow(s.expires_at)}; ` +
      `${s.ttl_seconds} s since its opening, of at most ${TTL_MAX_S})\n`,
  );
}
