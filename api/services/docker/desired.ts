/**
 * @module What should run for one service, as the runtime was last told (apply, canary weight,
 * canary weight): the revisions wanted beside each other, how many replicas of each, and which
 * take what share of the traffic. Promotion and halts change it without a new rollout.
 */
import type { RevisionRun, RolloutTarget } from '../runtime';
import { specDigest } from './labels';

export interface Desired {
  target: RolloutTarget;
  /** The canary's share of traffic now (a weight change moves it; the target keeps the applied one). */
  weight: number;
  /** Replicas of the stable revision during a canary: as many as it had before. */
  stableReplicas: number;
}

/** A revision wanted now, in one spec (`variant`: its revision and spec digest). */
export interface Wanted {
  role: 'current' | 'stable' | 'canary';
  run: RevisionRun;
  variant: string;
  count: number;
}

export const variantOf = (revision: string, spec: string) => `${revision}@${spec}`;

const wanted = (role: Wanted['role'], run: RevisionRun, count: number): Wanted => ({ role, run, variant: variantOf(run.revision, specDigest(run)), count });

/** The revisions that should run: the current one, or a canary beside its stable revision. */
export function wantedOf(desired: Desired): Wanted[] {
  const { target } = desired;
  if (target.canary && target.stableRun) {
    return [wanted('stable', target.stableRun, desired.stableReplicas), wanted('canary', target.run, target.replicas)];
  }
  return [wanted('current', target.run, target.replicas)];
}

/**
 * The desired state after an apply: a canary runs as many stable replicas as the stable
 * revision's spec says (or, from a target that does not say, as many as it had); otherwise the
 * target alone.
 */
export function applied(target: RolloutTarget, before: Desired | undefined): Desired {
  let stableReplicas = target.stableReplicas ?? target.replicas;
  if (target.canary && before) {
    const kept = wantedOf(before).find((w) => w.run.revision === target.canary!.stableRevision);
    if (kept && target.stableReplicas === undefined) stableReplicas = kept.count;
  }
  return { target, weight: target.canary?.weight ?? 0, stableReplicas };
}

/** The desired state after a weight change: 100 promotes the canary (the stable revision goes). */
export function weighted(desired: Desired, weight: number): Desired {
  if (!desired.target.canary) return desired;
  if (weight < 100) return { ...desired, weight };
  return { ...desired, target: { ...desired.target, canary: undefined, stableRun: undefined }, weight: 0 };
}
