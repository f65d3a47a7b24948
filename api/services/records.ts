/**
 * @module A service's rows as the deployment operations share them: found or 404, tagged for
 * conditional requests (ETags), shown as a record or as its canary state, turned into what the
 * runtime should run, and changed in one SQLite transaction together with their audit rows, the
 * runtime told only after the commit.
 */
import { etagOf } from '../preconditions';
import { notFound } from '../errors';
import type { Role } from '../roles';
import type { Store } from '../store/index';
import type { CanaryState, Service, ServiceChange, ServiceDetail } from '../../shared/api/services';
import type { CurrentImage, Environment, RevisionRow, ServiceRow } from '../store/services';
import { runOf } from './revision-run';
import type { DeploymentRuntime, RolloutTarget } from './runtime';
import { SERVICE_NAME } from './spec';
import { createReadiness } from './status';

/** Who may change what, per environment (docs/http-api.md, deployments). */
export const WRITE_ROLE: Record<Environment, Role> = { dev: 'developer', staging: 'developer', prod: 'platform-engineer' };

export interface ServiceRecordsDeps {
  store: Store;
  runtime: DeploymentRuntime;
  now: () => number;
}

export function createServiceRecords({ store, runtime, now }: ServiceRecordsDeps) {
  const repo = store.services;
  const iso = () => new Date(now()).toISOString();
  const readiness = createReadiness();

  function serviceOr404(name: string, env: Environment): ServiceRow {
    const row = SERVICE_NAME.test(name) ? repo.get(name, env) : undefined;
    if (!row) throw notFound(`no service ${name} in ${env}`);
    return row;
  }

  const revisionRow = (row: ServiceRow, revision: string): RevisionRow => repo.revision(row.name, row.environment, revision)!;

  /** The current revision's image, read along with the row unless the row has moved on since. */
  function imageOf(row: ServiceRow & Partial<CurrentImage>): string {
    return row.current_image_of === row.current_revision && row.current_image ? row.current_image : revisionRow(row, row.current_revision).image;
  }

  /** What the runtime should be running for a service row. */
  function targetOf(row: ServiceRow): RolloutTarget {
    const deployed = revisionRow(row, row.canary_revision ?? row.current_revision);
    const stable = row.canary_revision ? revisionRow(row, row.current_revision) : undefined;
    return {
      service: row.name,
      environment: row.environment,
      rollout: row.rollout,
      revision: deployed.revision,
      image: deployed.image,
      replicas: row.desired_replicas,
      ready: row.ready_replicas,
      canary: row.canary_revision ? { stableRevision: row.current_revision, weight: row.canary_weight! } : undefined,
      run: runOf(deployed),
      stableRun: stable && runOf(stable),
      stableReplicas: stable?.replicas,
    };
  }

  /**
   * The service as listed; `image` when it is not the current revision's yet (a dry run). What the
   * runtime knows beside the row: its environment's ingress, and ready replicas per revision.
   */
  function listed(row: ServiceRow, image = imageOf(row)): Service {
    const byRevision = readiness.of(row.name, row.environment, row.rollout);
    const endpoint = runtime.endpointOf?.(row.environment);
    return {
      name: row.name,
      environment: row.environment,
      status: row.status,
      image,
      replicas: { desired: row.desired_replicas, ready: row.ready_replicas, ...(byRevision && { by_revision: byRevision }) },
      current_revision: row.current_revision,
      last_deployed_at: row.last_deployed_at,
      runtime: runtime.nameOf(row.environment),
      ...(endpoint ? { endpoint } : {}),
      ...(row.canary_revision ? { canary: { revision: row.canary_revision, weight: row.canary_weight ?? 0 } } : {}),
      ...(row.status === 'failed' && row.status_message !== null && { status_message: row.status_message }),
    };
  }

  /** Runs a change (rows and their audit) as one transaction. */
  function transact(writes: () => void): void {
    store.db.transaction(writes)();
  }

  /** Commits a new rollout (row, revisions, audit) in one transaction, then tells the runtime. */
  function commit(next: ServiceRow, writes: () => void): ServiceRow {
    transact(() => {
      repo.put(next);
      writes();
    });
    runtime.apply(targetOf(next));
    return next;
  }

  return {
    repo,
    iso,
    /** Ready replicas per revision, as the runtime reports them (in memory). */
    readiness,
    serviceOr404,
    imageOf,
    targetOf,
    transact,
    commit,

    /** The service's tag: its rollouts and revisions, not how far the runtime has got. */
    serviceTag: (row: ServiceRow) =>
      etagOf(['service', row.name, row.environment, row.rollout, row.current_revision, row.previous_revision, row.canary_revision, row.canary_weight]),

    /** The canary state's tag: which revisions take what share of the traffic. */
    canaryTag: (row: ServiceRow) => etagOf(['canary', row.name, row.environment, row.current_revision, row.canary_revision, row.canary_weight]),

    audit: (event: string, row: { name: string; environment: Environment }, revision: string | null, actor: string, details = {}) =>
      repo.audit({ event, service: row.name, environment: row.environment, revision, actor, at: iso(), details }),

    listed: (row: ServiceRow): Service => listed(row),

    /** The service as read alone: with its previous revision and whether the runtime caught up. */
    detail(row: ServiceRow): ServiceDetail {
      return { ...listed(row), previous_revision: row.previous_revision, gitops_sync_status: row.sync_status };
    },

    /** The service as a change (apply, rollback, promote) leaves it; `image` for a dry run's would-be image. */
    change(row: ServiceRow, dryRun: boolean, image?: string): ServiceChange {
      return { ...listed(row, image), previous_revision: row.previous_revision, dry_run: dryRun };
    },

    /** The canary state: which revision takes what share of the traffic. */
    canaryView(row: ServiceRow): CanaryState {
      const stable = { revision: row.current_revision, image: imageOf(row) };
      const weight = row.canary_weight ?? 0;
      return {
        service: row.name,
        environment: row.environment,
        canary_active: row.canary_revision !== null,
        stable: { revision: stable.revision, image: stable.image, weight: row.canary_revision ? 100 - weight : 100 },
        canary: row.canary_revision ? { revision: row.canary_revision, image: revisionRow(row, row.canary_revision).image, weight } : null,
      };
    },
  };
}
export type ServiceRecords = ReturnType<typeof createServiceRecords>;
