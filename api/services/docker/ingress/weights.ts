/**
 * @module A canary's share of traffic as HAProxy server weights (0–256). HAProxy's round robin
 * gives each server its weight's worth of requests per cycle of the weights' sum, so a share is
 * exact when the canary servers' weights add up to `percent` parts of the whole: the groups get
 * totals in the ratio percent : (100 − percent), reduced, then multiplied by the smallest factor
 * that gives every server at least 1. The cycle stays as short as exactness allows.
 */

/** HAProxy's largest server weight. */
export const MAX_WEIGHT = 256;

function gcd(a: number, b: number): number {
  return b === 0 ? a : gcd(b, a % b);
}

/** `total` over `count` servers as evenly as possible: the first ones get the remainder. */
function spread(total: number, count: number): number[] {
  const base = Math.floor(total / count);
  const extra = total % count;
  return Array.from({ length: count }, (_, i) => base + (i < extra ? 1 : 0));
}

/**
 * The weight totals of the canary and the stable group: `canary : stable = percent : (100 −
 * percent)` exactly, each at most 256 per server. Every server gets at least 1 when the counts
 * allow it within 256; when they do not (1 % with more than 2.56 times as many canary servers as
 * stable ones, say), exactness wins and the group's last servers get 0.
 */
export function groupTotals(stableCount: number, canaryCount: number, percent: number): { stable: number; canary: number } {
  if (!Number.isInteger(percent) || percent < 0 || percent > 100) throw new RangeError(`canary percent must be an integer 0–100, not ${percent}`);
  if (stableCount === 0 && canaryCount === 0) return { stable: 0, canary: 0 };
  // A group with no servers takes nothing: the other one takes everything.
  const share = canaryCount === 0 ? 0 : stableCount === 0 ? 100 : percent;
  const g = gcd(share, 100 - share);
  const canaryUnit = share / g;
  const stableUnit = (100 - share) / g;
  const need = (count: number, unit: number) => (unit === 0 ? 1 : Math.ceil(count / unit));
  const room = (count: number, unit: number) => (unit === 0 ? Infinity : Math.floor((MAX_WEIGHT * count) / unit));
  // Factor 1 always fits (a unit is at most 100), so `factor` is at least 1.
  const factor = Math.min(Math.max(need(canaryCount, canaryUnit), need(stableCount, stableUnit)), room(canaryCount, canaryUnit), room(stableCount, stableUnit));
  return { stable: stableUnit * factor, canary: canaryUnit * factor };
}

/**
 * HAProxy weights for the stable and canary servers (by name) that send exactly
 * `canaryPercent` % of requests to the canary over each round-robin cycle: 0 sends none to the
 * canary, 100 sends it everything. Weights within a group differ by at most 1.
 */
export function splitWeights(stable: readonly string[], canary: readonly string[], canaryPercent: number): Map<string, number> {
  const names = [...stable, ...canary];
  if (new Set(names).size !== names.length) throw new RangeError('a server is named twice among the stable and canary servers');
  const totals = groupTotals(stable.length, canary.length, canaryPercent);
  const weights = new Map<string, number>();
  if (stable.length > 0) spread(totals.stable, stable.length).forEach((w, i) => weights.set(stable[i]!, w));
  if (canary.length > 0) spread(totals.canary, canary.length).forEach((w, i) => weights.set(canary[i]!, w));
  return weights;
}
