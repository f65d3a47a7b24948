/**
 * @module One reconcile step of a service, decided from what should run and what runs, without
 * touching anything: which replicas to start, where traffic goes, which replicas to remove.
 * Start-first: replicas of a revision no longer wanted keep serving until every wanted replica
 * is ready; only then does the route leave them and are they removed. Traffic goes to ready
 * replicas only; a canary gets exactly its weight of it.
 */
import { splitWeights, type RouteServer } from './ingress';
import { variantOf, wantedOf, type Desired, type Wanted } from './desired';
import { FINISHED, type Replica } from './replicas';

export interface Plan {
  /** How many new replicas of each wanted revision to start. */
  start: Array<{ wanted: Wanted; count: number }>;
  /** The servers of the service's route (set before anything is removed). */
  route: RouteServer[];
  /** Replicas to remove once the route is set: finished, extra, or of a revision no longer wanted. */
  remove: Replica[];
  /** Wanted replicas that exist but are not ready yet (for a failure's log lines). */
  waiting: Replica[];
  /** Every wanted revision has all its replicas ready. */
  complete: boolean;
  /** Ready replicas of the rollout's revision (the canary, during one), at most the replicas asked for. */
  ready: number;
  readyByRevision: Record<string, number>;
  /** Nothing left to do: complete, nothing to start or remove. */
  settled: boolean;
}

const variant = (r: Replica) => variantOf(r.revision, r.spec);
const routable = (r: Replica): r is Replica & { address: string } => r.ready && r.address !== undefined;

/** Ready ones first, then the oldest: those are kept when there are too many. */
function keepOrder(a: Replica, b: Replica): number {
  return Number(b.ready) - Number(a.ready) || a.created - b.created || a.name.localeCompare(b.name);
}

/** Equal shares, or the canary's weight split between the two groups. */
function routeOf(stable: Replica[], canary: Replica[], percent: number): RouteServer[] {
  const s = stable.filter(routable);
  const c = canary.filter(routable);
  const weights = splitWeights(
    s.map((r) => r.name),
    c.map((r) => r.name),
    percent,
  );
  return [...s, ...c].map((r) => ({ name: r.name, address: r.address!, weight: weights.get(r.name) ?? 0 }));
}

export function plan(desired: Desired, replicas: readonly Replica[]): Plan {
  const wanted = wantedOf(desired);
  const live = replicas.filter((r) => !FINISHED.has(r.state) && r.state !== 'removing');
  const remove = replicas.filter((r) => FINISHED.has(r.state));
  const start: Plan['start'] = [];
  const kept = new Map<Wanted, Replica[]>();
  const readyByRevision: Record<string, number> = {};
  for (const w of wanted) {
    const mine = live.filter((r) => variant(r) === w.variant).sort(keepOrder);
    kept.set(w, mine.slice(0, w.count));
    remove.push(...mine.slice(w.count));
    if (mine.length < w.count) start.push({ wanted: w, count: w.count - mine.length });
    readyByRevision[w.run.revision] = mine.slice(0, w.count).filter((r) => r.ready).length;
  }
  const wantedVariants = new Set(wanted.map((w) => w.variant));
  const old = live.filter((r) => !wantedVariants.has(variant(r)));
  const complete = wanted.every((w) => kept.get(w)!.filter((r) => r.ready).length >= w.count);
  const of = (role: Wanted['role']) => wanted.filter((w) => w.role === role).flatMap((w) => kept.get(w)!);

  // Until the wanted replicas are all ready, the ones they replace keep serving beside them.
  const stand = complete ? [] : old;
  const canary = wanted.some((w) => w.role === 'canary');
  const stable = canary ? of('stable') : of('current');
  const stableServing = stable.some(routable) ? stable : [...stable, ...stand];
  const route = canary ? routeOf(stableServing, of('canary'), desired.weight) : routeOf([...stable, ...stand], [], 0);
  if (complete) remove.push(...old);

  const rolloutRole = canary ? 'canary' : 'current';
  const rolloutWanted = wanted.find((w) => w.role === rolloutRole);
  const ready = rolloutWanted ? Math.min(readyByRevision[rolloutWanted.run.revision] ?? 0, rolloutWanted.count) : 0;
  const waiting = wanted.flatMap((w) => kept.get(w)!.filter((r) => !r.ready));
  return { start, route, remove, waiting, complete, ready, readyByRevision, settled: complete && start.length === 0 && remove.length === 0 };
}

/** Replicas of a service tether has no instructions for (adopted after a restart): all ready ones serve; nothing changes. */
export function adoptedRoute(replicas: readonly Replica[]): RouteServer[] {
  return routeOf([...replicas], [], 0);
}
