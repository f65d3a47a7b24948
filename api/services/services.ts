/**
 * @module Services (docs/http-api.md, deployments): apply (`./apply`), rollback (`./rollback`),
 * delete and canary (`./canary`) operations, the reads, and the runtime's reports (`./reports`).
 * Each state change is one transaction together with its revision and audit rows, made in place
 * of the service row as it was read (`./records`), so a crash never leaves a half-applied revision
 * and no peer's change is lost to another's; the runtime is told only after the commit, and
 * rollouts still `deploying` are resumed at start-up.
 */
import type { Logger } from '../../shared/log';
import type { ReplicaLogs, Service, ServiceDetail } from '../../shared/api/services';
import { requireAccess } from '../access';
import { ApiError } from '../errors';
import { unconditional, type Precondition } from '../preconditions';
import type { Store } from '../store/index';
import type { Environment, ServiceRow } from '../store/services';
import type { Principal } from '../store/tokens';
import { createApply } from './apply';
import { createCanary } from './canary';
import { createServiceRecords } from './records';
import { createReports } from './reports';
import { createRollback } from './rollback';
import type { DeploymentRuntime } from './runtime';

export interface DeploymentDeps {
  store: Store;
  runtime: DeploymentRuntime;
  log: Logger;
  now: () => number;
}

export function createServices({ store, runtime, log, now }: DeploymentDeps) {
  const records = createServiceRecords({ store, runtime, now });
  const { repo, serviceOr404, serviceTag, audit } = records;
  const { canary, setWeight, halt, promote } = createCanary(records, runtime, log);
  const { onReport, idle } = createReports(records, log);

  return {
    apply: createApply(records, log),

    async list(principal: Principal, env: Environment, status: ServiceRow['status'] | undefined, limit: number, offset: number) {
      requireAccess(principal, 'deployments:read', 'developer');
      const { items, total } = await repo.list(env, status, limit, offset);
      return { items: await Promise.all(items.map((r): Promise<Service> => records.listed(r))), total };
    },

    async get(principal: Principal, env: Environment, name: string): Promise<ServiceDetail> {
      requireAccess(principal, 'deployments:read', 'developer');
      return records.detail(await serviceOr404(name, env));
    },

    async history(principal: Principal, env: Environment, name: string, limit: number, offset: number) {
      requireAccess(principal, 'deployments:read', 'developer');
      const row = await serviceOr404(name, env);
      const { items, total } = await repo.history(name, env, limit, offset);
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

    /** Removes the service in that environment for good (as it was when checked); its pods are terminated. */
    async remove(principal: Principal, env: Environment, name: string, precondition: Precondition = unconditional) {
      requireAccess(principal, 'deployments:write', 'platform-engineer', 'deleting services');
      await records.retrying(async () => {
        const row = await serviceOr404(name, env);
        precondition(serviceTag(row));
        await records.transact(async (tx) => {
          if (!(await tx.services.delete(name, env, row))) records.raced(name, env);
          await audit(tx, 'service.deleted', row, row.current_revision, principal.username);
        });
      });
      runtime.remove(name, env);
      records.readiness.forget(name, env);
      log.info('service deleted', { service: name, environment: env });
      return { name, environment: env, deleted: true };
    },

    /** The replicas' recent log lines (at most `lines` each), as the runtime keeps them; none for the simulated one. */
    async logs(principal: Principal, env: Environment, name: string, lines: number): Promise<ReplicaLogs[]> {
      requireAccess(principal, 'deployments:read', 'developer');
      await serviceOr404(name, env);
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

    /**
     * The tags of the service and of its canary state as a view this returned (from `get`,
     * `apply`, `rollback`, `promote`, the canary operations) shows them: of the very row it was
     * made from, whatever changed since. Undefined for other objects.
     */
    tagsOf: records.tagsOf,

    onReport,
    idle,

    /** Rollouts that were under way when the server stopped carry on from where they were. */
    async resume(): Promise<number> {
      const rows = await repo.deploying();
      const targets = await Promise.all(rows.map((row) => records.targetOf(row)));
      for (const target of targets) runtime.apply(target);
      if (rows.length > 0) log.info('resumed rollouts', { count: rows.length });
      return rows.length;
    },
  };
}
export type Services = ReturnType<typeof createServices>;
