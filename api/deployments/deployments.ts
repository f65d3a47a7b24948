/**
 * @module Deployments (docs/http-api.md, deployments): apply, rollback, delete and
 * canary operations. Each state change is one SQLite transaction together with its revision and
 * audit rows, so a crash never leaves a half-applied revision; the runtime is told only after
 * the commit, and rollouts still `deploying` are resumed at start-up.
 */
import { etagOf, unconditional, type Precondition } from '../preconditions';
import type { Logger } from '../../shared/log';
import { ApiError, conflict, notFound } from '../errors';
import { requireAccess } from '../access';
import type { Role } from '../roles';
import type { Store } from '../store/index';
import type { CurrentImage, Environment, RevisionRow, ServiceRow } from '../store/services';
import type { Principal } from '../store/tokens';
import type { DeploymentRuntime, RolloutTarget, RuntimeReport } from './runtime';
import { parseSpec, SERVICE_NAME } from './spec';
import { deriveStatus, syncStatus } from './status';

export interface DeploymentDeps {
  store: Store;
  runtime: DeploymentRuntime;
  log: Logger;
  now: () => number;
}

/** Who may change what, per environment (docs/http-api.md, deployments). */
const WRITE_ROLE: Record<Environment, Role> = { dev: 'developer', staging: 'developer', prod: 'platform-engineer' };
const ROLLBACK_ROLE: Record<Environment, Role> = { dev: 'developer', staging: 'platform-engineer', prod: 'platform-engineer' };

export function createDeployments({ store, runtime, log, now }: DeploymentDeps) {
  const repo = store.services;
  const iso = () => new Date(now()).toISOString();

  function serviceOr404(name: string, env: Environment): ServiceRow {
    const row = SERVICE_NAME.test(name) ? repo.get(name, env) : undefined;
    if (!row) throw notFound(`no service ${name} in ${env}`);
    return row;
  }

  const revisionRow = (row: ServiceRow, revision: string): RevisionRow => repo.revision(row.name, row.environment, revision)!;

  /** The service's tag: its rollouts and revisions, not how far the runtime has got. */
  const serviceTag = (row: ServiceRow) =>
    etagOf(['service', row.name, row.environment, row.rollout, row.current_revision, row.previous_revision, row.canary_revision, row.canary_weight]);
  /** The canary state's tag: which revisions take what share of the traffic. */
  const canaryTag = (row: ServiceRow) => etagOf(['canary', row.name, row.environment, row.current_revision, row.canary_revision, row.canary_weight]);

  /** What the runtime should be running for a service row. */
  function targetOf(row: ServiceRow): RolloutTarget {
    const deployed = revisionRow(row, row.canary_revision ?? row.current_revision);
    return {
      service: row.name,
      environment: row.environment,
      rollout: row.rollout,
      revision: deployed.revision,
      image: deployed.image,
      replicas: row.desired_replicas,
      ready: row.ready_replicas,
      canary: row.canary_revision ? { stableRevision: row.current_revision, weight: row.canary_weight! } : undefined,
    };
  }

  /** The current revision's image, read along with the row unless the row has moved on since. */
  function imageOf(row: ServiceRow & Partial<CurrentImage>): string {
    return row.current_image_of === row.current_revision && row.current_image
      ? row.current_image
      : revisionRow(row, row.current_revision).image;
  }

  /** The service record, with the action or read extras the caller asks for. */
  function view(row: ServiceRow, extra: { previous?: boolean; sync?: boolean; dryRun?: boolean; image?: string } = {}) {
    return {
      name: row.name,
      environment: row.environment,
      status: row.status,
      image: extra.image ?? imageOf(row),
      replicas: { desired: row.desired_replicas, ready: row.ready_replicas },
      current_revision: row.current_revision,
      ...(extra.previous ? { previous_revision: row.previous_revision } : {}),
      last_deployed_at: row.last_deployed_at,
      ...(extra.sync ? { gitops_sync_status: row.sync_status } : {}),
      ...(extra.dryRun !== undefined ? { dry_run: extra.dryRun } : {}),
      runtime: runtime.name,
      ...(row.canary_revision ? { canary: { revision: row.canary_revision, weight: row.canary_weight } } : {}),
    };
  }

  function canaryView(row: ServiceRow) {
    const stable = { revision: row.current_revision, image: imageOf(row) };
    const weight = row.canary_weight ?? 0;
    return {
      service: row.name,
      environment: row.environment,
      canary_active: row.canary_revision !== null,
      stable: { revision: stable.revision, image: stable.image, weight: row.canary_revision ? 100 - weight : 100 },
      canary: row.canary_revision ? { revision: row.canary_revision, image: revisionRow(row, row.canary_revision).image, weight } : null,
    };
  }

  const audit = (event: string, row: { name: string; environment: Environment }, revision: string | null, actor: string, details = {}) =>
    repo.audit({ event, service: row.name, environment: row.environment, revision, actor, at: iso(), details });

  /** Commits a new rollout (row, revisions, audit) in one transaction, then tells the runtime. */
  function commit(next: ServiceRow, writes: () => void): ServiceRow {
    store.db.transaction(() => {
      repo.put(next);
      writes();
    })();
    runtime.apply(targetOf(next));
    return next;
  }

  /**
   * Only a canary whose rollout is complete takes all traffic, so a promoted service is `healthy`
   * in the response and the reads after it, and `healthy` keeps meaning every replica ready
   * (docs/http-api.md, deployments). Before that a 409 says how far the rollout is, for a retry.
   */
  function requirePromotable(row: ServiceRow): void {
    const what = `canary ${row.canary_revision} of ${row.name} in ${row.environment}`;
    const ready = `${row.ready_replicas} of ${row.desired_replicas} replicas ready`;
    if (row.status === 'failed') throw conflict(`${what} failed to roll out (${ready}); roll back or apply again`);
    if (row.ready_replicas < row.desired_replicas) {
      throw conflict(`${what} has ${ready}; promote it once all are ready`);
    }
  }

  /** The canary becomes current with all traffic; the old stable revision becomes `previous`. */
  function promoteRow(principal: Principal, row: ServiceRow): ServiceRow {
    requirePromotable(row);
    const canary = row.canary_revision!;
    const next: ServiceRow = {
      ...row,
      status: 'healthy',
      current_revision: canary,
      previous_revision: row.current_revision,
      canary_revision: null,
      canary_weight: null,
      sync_status: syncStatus(row.desired_replicas, row.ready_replicas),
    };
    store.db.transaction(() => {
      repo.put(next);
      audit('canary.promoted', row, canary, principal.username, { previous: row.current_revision });
    })();
    runtime.setCanaryWeight(row.name, row.environment, 100);
    log.info('canary promoted', { service: row.name, environment: row.environment, revision: canary });
    return next;
  }

  /** Weight 0 halts, 100 promotes, anything between shifts traffic. */
  function setWeight(principal: Principal, env: Environment, name: string, weight: number, precondition: Precondition = unconditional) {
    requireAccess(principal, 'deployments:write', WRITE_ROLE[env], `changing canaries in ${env}`);
    const row = serviceOr404(name, env);
    precondition(canaryTag(row));
    if (!row.canary_revision) throw conflict(`${name} in ${env} has no canary deployed`);
    if (weight === 100) return canaryView(promoteRow(principal, row));
    const next = { ...row, canary_weight: weight };
    store.db.transaction(() => {
      repo.put(next);
      audit(weight === 0 ? 'canary.halted' : 'canary.weight_set', row, row.canary_revision, principal.username, { weight });
    })();
    runtime.setCanaryWeight(name, env, weight);
    return canaryView(next);
  }

  return {
    /** Validates a service spec and, unless `dryRun`, deploys it. */
    apply(principal: Principal, env: Environment, yaml: string, dryRun: boolean, precondition: Precondition = unconditional) {
      requireAccess(principal, 'deployments:write', WRITE_ROLE[env], `deploying to ${env}`);
      const parsed = parseSpec(yaml);
      if (!parsed.ok) {
        throw new ApiError('invalid_spec', `the service spec is invalid: ${parsed.details.length} problem(s)`, parsed.details);
      }
      const { spec, revision } = parsed;
      const at = iso();
      const existing = repo.get(spec.service.name, env);
      precondition(existing && serviceTag(existing));
      const rollout = (existing?.rollout ?? 0) + 1;
      const canary = spec.deployment.strategy === 'canary' && existing !== undefined && existing.current_revision !== revision;
      const base = {
        name: spec.service.name,
        environment: env,
        status: 'deploying' as const,
        desired_replicas: spec.deployment.replicas,
        ready_replicas: 0,
        sync_status: 'OutOfSync' as const,
        rollout,
        last_deployed_at: at,
        created_at: existing?.created_at ?? at,
      };
      const next: ServiceRow = canary
        ? {
            ...base,
            current_revision: existing.current_revision,
            previous_revision: existing.previous_revision,
            canary_revision: revision,
            canary_weight: spec.deployment.canary?.weight ?? 10,
          }
        : {
            ...base,
            current_revision: revision,
            previous_revision:
              existing && existing.current_revision !== revision ? existing.current_revision : (existing?.previous_revision ?? null),
            canary_revision: null,
            canary_weight: null,
          };
      const revisionRow: RevisionRow = {
        service: next.name,
        environment: env,
        revision,
        image: spec.service.image,
        spec: yaml,
        replicas: spec.deployment.replicas,
        deployed_at: at,
        deployed_by: principal.username,
      };
      if (dryRun) {
        // Nothing is written: the record shows what the apply would do.
        const image = canary ? imageOf(existing) : spec.service.image;
        return view(next, { previous: true, dryRun: true, image });
      }
      commit(next, () => {
        repo.putRevision(revisionRow);
        audit('service.applied', next, revision, principal.username, {
          strategy: canary ? 'canary' : 'rolling',
          image: spec.service.image,
          replicas: spec.deployment.replicas,
        });
      });
      log.info('service applied', { service: next.name, environment: env, revision, strategy: canary ? 'canary' : 'rolling' });
      return view(next, { previous: true, dryRun: false });
    },

    list(principal: Principal, env: Environment, status: ServiceRow['status'] | undefined, limit: number, offset: number) {
      requireAccess(principal, 'deployments:read', 'developer');
      const { items, total } = repo.list(env, status, limit, offset);
      return { items: items.map((r) => view(r)), total };
    },

    get(principal: Principal, env: Environment, name: string) {
      requireAccess(principal, 'deployments:read', 'developer');
      return view(serviceOr404(name, env), { previous: true, sync: true });
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

    /** A new deployment of an earlier revision's image and stored spec. */
    rollback(principal: Principal, env: Environment, name: string, revision: string | undefined, precondition: Precondition = unconditional) {
      requireAccess(principal, 'deployments:write', ROLLBACK_ROLE[env], `rolling back in ${env}`);
      const row = serviceOr404(name, env);
      precondition(serviceTag(row));
      const targetRevision = revision ?? row.previous_revision;
      if (!targetRevision) throw conflict(`${name} in ${env} has no previous revision to roll back to`);
      const target = repo.revision(name, env, targetRevision);
      if (!target) throw notFound(`${name} in ${env} has no revision ${targetRevision}`);
      if (targetRevision === row.current_revision && !row.canary_revision) {
        throw conflict(`${targetRevision} is already the current revision of ${name} in ${env}`);
      }
      const at = iso();
      const next: ServiceRow = {
        ...row,
        status: 'deploying',
        current_revision: targetRevision,
        previous_revision: targetRevision === row.current_revision ? row.previous_revision : row.current_revision,
        desired_replicas: target.replicas,
        ready_replicas: 0,
        sync_status: 'OutOfSync',
        canary_revision: null,
        canary_weight: null,
        rollout: row.rollout + 1,
        last_deployed_at: at,
      };
      commit(next, () => {
        repo.putRevision({ ...target, deployed_at: at, deployed_by: principal.username });
        audit('service.rolled_back', next, targetRevision, principal.username, { from: row.current_revision });
      });
      log.info('service rolled back', { service: name, environment: env, from: row.current_revision, to: targetRevision });
      return view(next, { previous: true, dryRun: false });
    },

    /** Removes the service in that environment for good; its pods are terminated. */
    remove(principal: Principal, env: Environment, name: string, precondition: Precondition = unconditional) {
      requireAccess(principal, 'deployments:write', 'platform-engineer', 'deleting services');
      const row = serviceOr404(name, env);
      precondition(serviceTag(row));
      store.db.transaction(() => {
        repo.delete(name, env);
        audit('service.deleted', row, row.current_revision, principal.username);
      })();
      runtime.remove(name, env);
      log.info('service deleted', { service: name, environment: env });
      return { name, environment: env, deleted: true };
    },

    canary(principal: Principal, env: Environment, name: string) {
      requireAccess(principal, 'deployments:read', 'developer');
      return canaryView(serviceOr404(name, env));
    },

    setWeight,

    halt: (principal: Principal, env: Environment, name: string, precondition: Precondition = unconditional) =>
      setWeight(principal, env, name, 0, precondition),

    promote(principal: Principal, env: Environment, name: string, precondition: Precondition = unconditional) {
      requireAccess(principal, 'deployments:write', WRITE_ROLE[env], `changing canaries in ${env}`);
      const row = serviceOr404(name, env);
      precondition(canaryTag(row));
      if (!row.canary_revision) throw conflict(`${name} in ${env} has no canary deployed`);
      return view(promoteRow(principal, row), { previous: true, dryRun: false });
    },

    /** The current tags of a service and of its canary state (none: no such service). */
    tags(env: Environment, name: string): { service?: string; canary?: string } {
      const row = SERVICE_NAME.test(name) ? repo.get(name, env) : undefined;
      return row ? { service: serviceTag(row), canary: canaryTag(row) } : {};
    },

    /** A runtime report: replicas ready for a rollout; stale rollouts are ignored. */
    onReport(report: RuntimeReport): void {
      const row = repo.get(report.service, report.environment);
      if (!row || row.rollout !== report.rollout) return;
      const status = deriveStatus(row.status, row.desired_replicas, report);
      repo.progress(row.name, row.environment, row.rollout, report.ready, status, syncStatus(row.desired_replicas, report.ready));
      if (status !== row.status) log.info('service status changed', { service: row.name, environment: row.environment, status });
    },

    /** Rollouts that were under way when the server stopped carry on from where they were. */
    resume(): number {
      const rows = repo.deploying();
      for (const row of rows) runtime.apply(targetOf(row));
      if (rows.length > 0) log.info('resumed rollouts', { count: rows.length });
      return rows.length;
    },
  };
}
export type Deployments = ReturnType<typeof createDeployments>;
