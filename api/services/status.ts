/**
 * @module How a service's status follows the runtime's reports: `deploying` until every replica
 * of the rollout is ready, then `healthy`; a healthy service that loses replicas is `degraded`;
 * a rollout the runtime gave up on is `failed`, with why (kept with the service), until every
 * replica of it is ready after all. Ready replicas per revision are kept in memory only: the
 * runtime says them again with its next report, also after a restart. Runtime-agnostic by
 * construction.
 */
import type { RuntimeReport } from './runtime';
import type { Environment, ServiceStatus } from '../store/services';

/** The longest `status_message` kept (the column's bound); the runtime's reason comes first, its log lines after. */
export const MAX_STATUS_MESSAGE = 8192;

export function deriveStatus(previous: ServiceStatus, desired: number, report: RuntimeReport): ServiceStatus {
  if (report.state === 'failed') return 'failed';
  if (report.ready >= desired) return 'healthy';
  // A later report of a failed rollout does not make it look under way again.
  if (previous === 'failed') return 'failed';
  return previous === 'healthy' || previous === 'degraded' ? 'degraded' : 'deploying';
}

/**
 * Why a service is `failed`: the runtime's message (the reason, then the container's last log
 * lines), cut to what is kept; null for any other status. `previous` is what was kept before:
 * a later report of the same failed rollout without a message keeps it.
 */
export function statusMessage(status: ServiceStatus, report: RuntimeReport, desired: number, previous: string | null): string | null {
  if (status !== 'failed') return null;
  const said = report.message?.trim();
  if (!said) return previous ?? `the runtime gave up on the rollout with ${report.ready} of ${desired} replicas ready`;
  return said.length <= MAX_STATUS_MESSAGE ? said : `${said.slice(0, MAX_STATUS_MESSAGE - 1)}…`;
}

/** `Synced` once every replica of the last applied spec is ready. */
export const syncStatus = (desired: number, ready: number) => (ready >= desired ? 'Synced' : 'OutOfSync');

/** The most revisions one report may list: a rolling update and a canary run two or three. */
const MAX_REVISIONS = 16;

/** Ready replicas per revision of each service, as its runtime last reported them for the rollout under way. */
export function createReadiness() {
  const known = new Map<string, { rollout: number; byRevision: Record<string, number> }>();
  const key = (name: string, env: Environment) => `${env}/${name}`;

  return {
    /** Keeps what a report (of the rollout under way) says per revision; a report without it changes nothing. */
    record(report: RuntimeReport): void {
      if (!report.readyByRevision) return;
      const counts = Object.entries(report.readyByRevision)
        .filter(([, n]) => Number.isInteger(n) && n >= 0)
        .sort(([a], [b]) => a.localeCompare(b))
        .slice(0, MAX_REVISIONS);
      known.set(key(report.service, report.environment), { rollout: report.rollout, byRevision: Object.fromEntries(counts) });
    },
    /** What the runtime reported for this rollout of the service; undefined when it has not (yet). */
    of(name: string, env: Environment, rollout: number): Record<string, number> | undefined {
      const k = known.get(key(name, env));
      return k && k.rollout === rollout ? { ...k.byRevision } : undefined;
    },
    forget(name: string, env: Environment): void {
      known.delete(key(name, env));
    },
  };
}
export type Readiness = ReturnType<typeof createReadiness>;
