/**
 * @module How a service's status follows the runtime's reports: `deploying` until every replica
 * of the rollout is ready, then `healthy`; a healthy service that loses replicas is `degraded`;
 * a rollout the runtime gave up on is `failed`. Runtime-agnostic by construction.
 */
import type { RuntimeReport } from './runtime';
import type { ServiceStatus } from '../store/services';

export function deriveStatus(previous: ServiceStatus, desired: number, report: RuntimeReport): ServiceStatus {
  if (report.state === 'failed') return 'failed';
  if (report.ready >= desired) return 'healthy';
  return previous === 'healthy' || previous === 'degraded' ? 'degraded' : 'deploying';
}

/** `Synced` once every replica of the last applied spec is ready. */
export const syncStatus = (desired: number, ready: number) => (ready >= desired ? 'Synced' : 'OutOfSync');
