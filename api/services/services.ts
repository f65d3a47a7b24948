/**
 * @module Services (docs/http-api.md, deployments): apply (`./apply`), rollback (`./rollback`),
 * delete and canary (`./canary`) operations, the reads, and the runtime's reports. Each state
 * change is one SQLite transaction together with its revision and audit rows (`./records`), so a
 * crash never leaves a half-applied revision; the runtime is told only after the commit, and
 * rollouts still `deploying` are resumed at start-up.
 */
import type { Logger } from '../../shared/log';
import type { ReplicaLogs } from '../../shared/api/services';
import { requireAccess } from '../access';
import { ApiError } from '../errors';
import { unconditional, type Precondition } from '../preconditions';
import type { Store } from '../store/index';
import type { Environment, ServiceRow } from '../store/services';
import type { Principal } from '../store/tokens';
import { createApply } from './apply';
import { createCanary } from './canary';
import { createServiceRecords } from './records';
import { createRollback } from './rollback';
import type { DeploymentRuntime, RuntimeReport } from './runtime';
import { SERVICE_NAME } from './spec';
import { deriveStatus, statusMessage, syncStatus } from './status';

export interface DeploymentDeps {
  store: Store;
  runtime: DeploymentRuntime;
  log: Logger;
  now: () => number;
}

export function createServices({ store, runtime, log, now }: DeploymentDeps) {
  const records = createServiceRecords({ store, runtime, now });
  const { repo, serviceOr404, serviceTag, canaryTag, audit } = records;
  const { canary, setWeight, halt, promote } = createCanary(records, runtime, log);

  return {
    apply: createApply(records, log),

    list(principal: Principal, env: Environment, status: ServiceRow['status'] | undefined, limit: number, offset: number) {
      requireAccess(principal, 'deployments:read', 'developer');
      const { items, total } = repo.list(env, status, limit, offset);
      return { items: items.map((r) => records.listed(r)), total };
    },

    get(principal: Principal, env: Environment, name: string) {
      requireAccess(principal, 'deployments:read', 'developer');
      return records.detail(serviceOr404(name, env));
    },

    history(principal: Principal, env: Environment, name: string, limit: number, offset: number) {
      requireAccess(principal, 'deployments:read', 'developer');
      const row = serviceOr404(name, env);
      const { items, total } = repo.history(name, env, limit, offset);
      return {
        items: items.map((r) => ({
          revision: r.revision,
          image: r.image,
          deployed_at: r.deployed_at,
          deployed_by: r.deployed_by,
          status: r.revision === row.current_revision ? 'current' : r.revision === row.previous_revision ? 'previous' : 'available',
        })),
        total,
      };
    },

    rollback: createRollback(records, log),

    /** Removes the service in that environment for good; its pods are terminated. */
    remove(principal: Principal, env: Environment, name: string, precondition: Precondition = unconditional) {
      requireAccess(principal, 'deployments:write', 'platform-engineer', 'deleting services');
      const row = serviceOr404(name, env);
      precondition(serviceTag(row));
      records.transact(() => {
        repo.delete(name, env);
        audit('service.deleted', row, row.current_revision, principal.username);
      });
      runtime.remove(name, env);
      records.readiness.forget(name, env);
      log.info('service deleted', { service: name, environment: env });
      return { name, environment: env, deleted: true };
    },

    /** The replicas' recent log lines (at most `lines` each), as the runtime keeps them; none for the simulated one. */
    async logs(principal: Principal, env: Environment, name: string, lines: number): Promise<ReplicaLogs[]> {
      requireAccess(principal, 'deployments:read', 'developer');
      serviceOr404(name, env);
      let replicas: ReplicaLogs[];
      try {
        replicas = (await runtime.logs?.(name, env, lines)) ?? [];
      } catch (err) {
        log.warn('reading replica logs failed', { service: name, environment: env, err: (err as Error).message });
        throw new ApiError('unavailable', `the ${runtime.nameOf(env)} runtime could not read the logs of ${name} in ${env}; try again`);
      }
      return replicas.map((r) => ({ replica: r.replica, revision: r.revision, lines: r.lines.slice(-lines) }));
    },

    canary,
    setWeight,
    halt,
    promote,

    /** The current tags of a service and of its canary state (none: no such service). */
    tags(env: Environment, name: string): { service?: string; canary?: string } {
      const row = SERVICE_NAME.test(name) ? repo.get(name, env) : undefined;
      return row ? { service: serviceTag(row), canary: canaryTag(row) } : {};
    },

    /**
     * A runtime report: replicas ready for a rollout (in all, and per revision), and why it
     * failed when it did; stale rollouts are ignored.
     */
    onReport(report: RuntimeReport): void {
      const row = repo.get(report.service, report.environment);
      if (!row || row.rollout !== report.rollout) return;
      records.readiness.record(report);
      const status = deriveStatus(row.status, row.desired_replicas, report);
      const message = statusMessage(status, report, row.desired_replicas, row.status_message);
      repo.progress(row.name, row.environment, row.rollout, report.ready, status, syncStatus(row.desired_replicas, report.ready), message);
      // Not the message: the container's log lines in it are the service's, and may hold anything.
      if (status !== row.status) log.info('service status changed', { service: row.name, environment: row.environment, status });
    },

    /** Rollouts that were under way when the server stopped carry on from where they were. */
    resume(): number {
      const rows = repo.deploying();
      for (const row of rows) runtime.apply(records.targetOf(row));
      if (rows.length > 0) log.info('resumed rollouts', { count: rows.length });
      return rows.length;
    },
  };
}
export type Services = ReturnType<typeof createServices>;
