/**
 * @module `tether access request | list | show | approve | deny | revoke | cancel` (docs/cli.md,
 * Access requests; CONTRACT 10.3): asking for a shell (or another protocol) on a device that a
 * policy protects, and the review of such requests by another administrator. `request --wait`
 * waits for the decision and says it: exit 0 when approved, 1 when denied, expired or canceled,
 * 130 on Ctrl-C (the request stays pending).
 */
import { allPages } from '../api-client';
import { ACCESS_LIMITS, type AccessRequest, type CreateRequestBody } from '../../shared/api/access';
import type { SessionProtocol } from '../../shared/protocol/control-channel';
import type { Context } from '../context';
import { describe } from '../describe';
import { usageError } from '../errors';
import { printJson, table } from '../output';
import { decisionText, durationText, onText, parseDuration, printable, shortTime, untilOf, whatText } from './access-format';
import { waitForDecision } from './access-wait';

const requestUrl = (id: string) => `/v1/access-requests/${encodeURIComponent(id)}`;

/** A reason as the API takes it (1–500 characters), checked before anything is sent. */
function checkReason(reason: string | undefined, required: boolean): string | undefined {
  const text = reason?.trim();
  if (text === undefined || text === '') {
    if (required) throw usageError('--reason must say why (1 to 500 characters)');
    return undefined;
  }
  if (text.length > ACCESS_LIMITS.reasonChars.max) throw usageError(`--reason is at most ${ACCESS_LIMITS.reasonChars.max} characters, not ${text.length}`);
  return text;
}

export interface RequestFlags {
  protocol: SessionProtocol[];
  reason: string;
  duration?: string;
  wait?: boolean;
  json?: boolean;
}

/** `tether access request DEVICE --protocol P … --reason TEXT [--duration D] [--wait]`; the exit code. */
export async function accessRequest(ctx: Context, device: string, flags: RequestFlags): Promise<number> {
  const reason = checkReason(flags.reason, true)!;
  const duration =
    flags.duration === undefined
      ? undefined
      : parseDuration('--duration', flags.duration, ACCESS_LIMITS.minDurationSeconds, ACCESS_LIMITS.maxDurationSeconds.max);
  const body: CreateRequestBody = {
    device_id: device,
    protocols: [...new Set(flags.protocol)],
    reason,
    ...(duration === undefined ? {} : { duration_seconds: duration }),
  };
  const created = await ctx.api().request<AccessRequest>('POST', '/v1/access-requests', body);
  const id = created.request_id;
  if (!flags.wait) {
    if (flags.json) printJson(ctx.out, created);
    else ctx.out.stdout(`requested ${id}: ${whatText(created)}; pending until ${shortTime(created.expires_at)}\n`);
    if (!flags.json) ctx.notice(`an administrator other than you approves it with: tether access approve ${id} --reason "…"`);
    return 0;
  }
  // Said once Ctrl-C is handled, so that what it promises holds from the moment it is read.
  const announce = () => ctx.notice(`requested ${id}: ${whatText(created)}; waiting for an administrator to approve or deny it (Ctrl-C stops waiting)`);
  const { request, interrupted } = await waitForDecision(ctx, created, announce);
  if (interrupted) {
    ctx.notice(`stopped waiting; ${id} stays pending (tether access show ${id}). To cancel it: tether access cancel ${id}`);
    return 130;
  }
  if (flags.json) printJson(ctx.out, request);
  else ctx.out.stdout(`${decisionText(request)}\n`);
  if (request.status !== 'approved') return 1;
  if (!flags.json) ctx.notice(`open it with: tether ${request.protocols.includes('shell') ? 'shell' : 'session open'} ${request.device_id}`);
  return 0;
}

export interface ListFlags {
  status?: string;
  device?: string;
  requester?: string;
  json?: boolean;
}

/** `tether access list`: every page, newest first (requesters see their own, administrators all). */
export async function accessList(ctx: Context, flags: ListFlags): Promise<void> {
  const all = await allPages<AccessRequest>(ctx.api(), (paging) => {
    const q = new URLSearchParams(paging);
    if (flags.status) q.set('status', flags.status);
    if (flags.device) q.set('device_id', flags.device);
    if (flags.requester) q.set('requester', flags.requester);
    return `/v1/access-requests?${q}`;
  });
  if (flags.json) return printJson(ctx.out, all);
  if (all.length === 0) return ctx.out.stdout(flags.status ? `no ${flags.status} access requests\n` : 'no access requests\n');
  const rows = all.map((r) => ({
    id: r.request_id,
    status: r.status,
    requester: r.requester,
    device: r.device_id,
    protocols: r.protocols.join(','),
    duration: durationText(r.duration_seconds),
    created: shortTime(r.created_at),
    reviewer: r.reviewed_by,
    until: shortTime(untilOf(r)),
  }));
  ctx.out.stdout(table(rows, ['id', 'status', 'requester', 'device', 'protocols', 'duration', 'created', 'reviewer', 'until']));
}

/** One request, every field that has a value, for people. */
function requestText(r: AccessRequest): string {
  const at = (who: string | null, when: string | null, why: string | null) =>
    who ? `${shortTime(when)} by ${who}${why ? `: ${printable(why)}` : ''}` : undefined;
  return describe([
    ['request', r.request_id],
    ['status', r.status],
    ['requester', r.requester],
    ['device', r.device_id],
    ['protocols', r.protocols.join(', ')],
    ['duration', durationText(r.duration_seconds)],
    ['reason', printable(r.reason)],
    ['created', shortTime(r.created_at)],
    ['pending until', r.status === 'pending' ? shortTime(r.expires_at) : undefined],
    ['reviewed', at(r.reviewed_by, r.reviewed_at, r.review_reason)],
    ['grant', r.starts_at ? `${shortTime(r.starts_at)} to ${shortTime(r.ends_at)}` : undefined],
    ['revoked', at(r.revoked_by, r.revoked_at, r.revoke_reason)],
  ]);
}

export async function accessShow(ctx: Context, id: string, flags: { json?: boolean }): Promise<void> {
  const r = await ctx.api().request<AccessRequest>('GET', requestUrl(id));
  if (flags.json) return printJson(ctx.out, r);
  ctx.out.stdout(requestText(r));
}

/** `tether access approve|deny ID --reason TEXT` (an administrator other than the requester). */
export async function accessReview(ctx: Context, verdict: 'approve' | 'deny', id: string, flags: { reason: string; json?: boolean }): Promise<void> {
  const reason = checkReason(flags.reason, true)!;
  const r = await ctx.api().request<AccessRequest>('POST', `${requestUrl(id)}/${verdict}`, { reason });
  if (flags.json) return printJson(ctx.out, r);
  ctx.out.stdout(
    verdict === 'approve'
      ? `approved ${r.request_id}: ${r.requester} may open ${onText(r)} until ${shortTime(r.ends_at)}\n`
      : `denied ${r.request_id} (${r.requester}: ${onText(r)})\n`,
  );
}

/** `tether access revoke ID [--reason TEXT]` (administrators): the grant ends now, its sessions close. */
export async function accessRevoke(ctx: Context, id: string, flags: { reason?: string; json?: boolean }): Promise<void> {
  const reason = checkReason(flags.reason, false);
  const r = await ctx.api().request<AccessRequest>('POST', `${requestUrl(id)}/revoke`, reason === undefined ? {} : { reason });
  if (flags.json) return printJson(ctx.out, r);
  ctx.out.stdout(`revoked ${r.request_id}: ${r.requester}'s grant on ${r.device_id} ended; its open sessions were closed (access_revoked)\n`);
}

/** `tether access cancel ID` (the requester, while it is pending). */
export async function accessCancel(ctx: Context, id: string, flags: { json?: boolean }): Promise<void> {
  const r = await ctx.api().request<AccessRequest>('DELETE', requestUrl(id));
  if (flags.json) return printJson(ctx.out, r);
  ctx.out.stdout(`canceled ${r.request_id} (${whatText(r)})\n`);
}
