/**
 * @module `tether access policy add | list | rm` (administrators; docs/cli.md, Access requests):
 * the policies that name, by labels, the devices whose sessions of some protocols need an
 * approved access request, and the longest grant a request there may ask for.
 */
import { allPages } from '../api-client';
import { ACCESS_LIMITS, type AccessPolicy, type CreatePolicyBody } from '../../shared/api/access';
import type { SessionProtocol } from '../../shared/protocol/control-channel';
import { confirm } from '../confirm';
import type { Context } from '../context';
import { usageError } from '../errors';
import { printJson, table } from '../output';
import { durationText, parseDuration } from './access-format';

const policyUrl = (id: string) => `/v1/access-policies/${encodeURIComponent(id)}`;

export interface PolicyAddFlags {
  label: string[];
  protocol: SessionProtocol[];
  maxDuration?: string;
  json?: boolean;
}

/** `k=v` pairs as the labels object; a pair without `=`, an empty key or a key twice is a usage error. */
function labelsOf(pairs: string[]): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq < 1) throw usageError(`--label takes KEY=VALUE (env=prod); got ${pair}`);
    const key = pair.slice(0, eq);
    if (Object.hasOwn(labels, key)) throw usageError(`--label ${key} is given twice: a device has one value per label`);
    labels[key] = pair.slice(eq + 1);
  }
  return labels;
}

const labelsText = (labels: Record<string, string>) =>
  Object.entries(labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');

export async function policyAdd(ctx: Context, name: string, flags: PolicyAddFlags): Promise<void> {
  const labels = labelsOf(flags.label);
  const { min, max } = ACCESS_LIMITS.maxDurationSeconds;
  const maxDuration = flags.maxDuration === undefined ? undefined : parseDuration('--max-duration', flags.maxDuration, min, max);
  const body: CreatePolicyBody = {
    name,
    match: { labels },
    protocols: [...new Set(flags.protocol)],
    ...(maxDuration === undefined ? {} : { max_duration_seconds: maxDuration }),
  };
  const p = await ctx.api().request<AccessPolicy>('POST', '/v1/access-policies', body);
  if (flags.json) return printJson(ctx.out, p);
  ctx.out.stdout(
    `added ${p.policy_id} (${p.name}): ${p.protocols.join(', ')} on devices labelled ${labelsText(p.match.labels)} ` +
      `need an approved access request, for at most ${durationText(p.max_duration_seconds)}\n`,
  );
}

export async function policyList(ctx: Context, flags: { json?: boolean }): Promise<void> {
  const all = await allPages<AccessPolicy>(ctx.api(), (paging) => `/v1/access-policies?${new URLSearchParams(paging)}`);
  if (flags.json) return printJson(ctx.out, all);
  if (all.length === 0) return ctx.out.stdout('no access policies: every device is open to the roles that may open sessions\n');
  const rows = all.map((p) => ({
    id: p.policy_id,
    name: p.name,
    labels: labelsText(p.match.labels),
    protocols: p.protocols.join(','),
    'max duration': durationText(p.max_duration_seconds),
    'created by': p.created_by,
  }));
  ctx.out.stdout(table(rows, ['id', 'name', 'labels', 'protocols', 'max duration', 'created by']));
}

/** `tether access policy rm ID [--yes]`: its devices need no request any more; the requests made under it stay. */
export async function policyRm(ctx: Context, id: string, flags: { yes?: boolean }): Promise<void> {
  await confirm(`delete access policy ${id}`, 'The devices it names then need no access request (unless another policy names them)', flags.yes);
  await ctx.api().request('DELETE', policyUrl(id));
  ctx.out.stdout(`deleted ${id}\n`);
}
