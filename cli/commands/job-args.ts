/**
 * @module What `tether job run | diag | push` take besides their own arguments: the target
 * (`--device` repeated, `--group` with its tenant, or `--label` repeated: exactly one kind) and
 * the rollout (`--max-per-minute`, `--max-in-flight`, `--abort-pct`, `--abort-min`, `--expires`),
 * checked against the interface's bounds (shared/api/jobs.ts) so a mistake is a usage error
 * (exit 2) found before anything is uploaded or created.
 */
import { JOB_LIMITS, relativePath, type CreateJobBody, type JobTarget } from '../../shared/api/jobs';
import type { Context } from '../context';
import { usageError } from '../errors';
import { fleetApi, groupIdOf, tenantOf } from './fleet-client';

export interface TargetFlags {
  device?: string[];
  group?: string;
  tenant?: string;
  label?: string[];
}

export interface RateFlags {
  maxPerMinute?: string;
  maxInFlight?: string;
  abortPct?: string;
  abortMin?: string;
  expires?: string;
}

/** The rollout fields of a job's body. */
export type Rate = Pick<CreateJobBody, 'max_per_minute' | 'max_in_flight' | 'abort_failure_pct' | 'abort_min_executed' | 'expires_in_seconds'>;

const TARGET_HELP = 'name the devices with --device D (repeatable), --group G (with --tenant T) or --label k=v (repeatable)';

/** `value` as a whole number within bounds, else a usage error naming the option. */
export function wholeNumber(option: string, value: string, bounds: { min: number; max: number }): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < bounds.min || n > bounds.max) {
    throw usageError(`${option} must be a whole number from ${bounds.min} to ${bounds.max}, not ${JSON.stringify(value)}`);
  }
  return n;
}

/** Checks which kind of target the flags name, with no request: a usage error unless exactly one. */
export function checkTarget(flags: TargetFlags): void {
  const kinds = [flags.device?.length ? '--device' : '', flags.group !== undefined ? '--group' : '', flags.label?.length ? '--label' : ''].filter(Boolean);
  if (kinds.length === 0) throw usageError(`no target: ${TARGET_HELP}`);
  if (kinds.length > 1) throw usageError(`${kinds.join(' and ')} are two kinds of target; a job has one: ${TARGET_HELP}`);
  if (flags.tenant !== undefined && flags.group === undefined) throw usageError('--tenant goes with --group (the tenant the group belongs to)');
  for (const l of flags.label ?? []) if (l.indexOf('=') <= 0) throw usageError(`--label takes key=value, not ${JSON.stringify(l)}`);
}

/**
 * The job's target. A group is named by id (`grp_…`) or by name, looked up in the tenant as
 * `tether fleet` does; the tenant is `--tenant`, else the token's only one.
 */
export async function targetOf(ctx: Context, flags: TargetFlags): Promise<JobTarget> {
  checkTarget(flags);
  if (flags.device?.length) return { device_ids: [...new Set(flags.device)] };
  if (flags.group !== undefined) {
    const tenant = await tenantOf(ctx, flags);
    return { group_id: await groupIdOf(fleetApi(ctx, tenant), tenant, flags.group), tenant };
  }
  const labels: Record<string, string> = {};
  for (const l of flags.label!) labels[l.slice(0, l.indexOf('='))] = l.slice(l.indexOf('=') + 1);
  return { labels };
}

/** The rollout fields the flags set; those not given are left to the server's defaults. */
export function rateOf(flags: RateFlags): Rate {
  if (flags.abortMin !== undefined && flags.abortPct === undefined)
    throw usageError('--abort-min goes with --abort-pct (abort once that share of ended executions failed)');
  const rate: Rate = {};
  // `none`: no pace at all, only --max-in-flight (the API's null).
  if (flags.maxPerMinute === 'none') rate.max_per_minute = null;
  else if (flags.maxPerMinute !== undefined) rate.max_per_minute = wholeNumber('--max-per-minute', flags.maxPerMinute, JOB_LIMITS.maxPerMinute);
  if (flags.maxInFlight !== undefined) rate.max_in_flight = wholeNumber('--max-in-flight', flags.maxInFlight, JOB_LIMITS.maxInFlight);
  if (flags.abortPct !== undefined) rate.abort_failure_pct = wholeNumber('--abort-pct', flags.abortPct, JOB_LIMITS.abortFailurePct);
  if (flags.abortMin !== undefined) rate.abort_min_executed = wholeNumber('--abort-min', flags.abortMin, JOB_LIMITS.abortMinExecuted);
  if (flags.expires !== undefined) rate.expires_in_seconds = wholeNumber('--expires', flags.expires, JOB_LIMITS.expiresInSeconds);
  return rate;
}

/** A path under the agent's files root, as the API takes it (relative, without `..`). */
export function checkDevicePath(path: string): void {
  if (!relativePath.safeParse(path).success) {
    throw usageError(`PATH is relative to each agent's files root and stays inside it (no leading / and no ..), not ${JSON.stringify(path)}`);
  }
}

/** An octal file mode such as 0644 or 600. */
export function checkMode(mode: string): void {
  if (!/^0?[0-7]{3}$/.test(mode)) throw usageError(`--mode takes an octal mode such as 0644 or 0600, not ${JSON.stringify(mode)}`);
}
