/**
 * @module A service's rows as the deployment operations share them: found or 404, tagged for
 * conditional requests (ETags), shown as a record or as its canary state, turned into what the
 * runtime should run, and changed in one transaction together with their revision and audit rows,
 * in place of the row as it was read: a change that finds the row moved on (another request or
 * peer came first) is made again from a fresh read (`retrying`). The runtime is told only after
 * the commit.
 */
import { etagOf } from '../preconditions';
import { conflict, notFound } from '../errors';
import type { Role } from '../roles';
import type { Repos, Store } from '../store/index';
import type { CanaryState, Service, ServiceChange, ServiceDetail } from '../../shared/api/services';
import type { CurrentImage, Environment, RevisionRow, ServiceRepo, ServiceRow } from '../store/services';
import { runOf } from './revision-run';
import type { DeploymentRuntime, RolloutTarget } from './runtime';
import { SERVICE_NAME } from './spec';
import { createReadiness } from './status';

/** Who may change what, per environment (docs/http-api.md, deployments). */
export const WRITE_ROLE: Record<Environment, Role> = { dev: 'developer', staging: 'developer', prod: 'platform-engineer' };

/** How often a change is made again from a fresh read before it gives up (409). */
export const MAX_ATTEMPTS = 5;

/** A change lost a race: the service row it read changed before it wrote. Its transaction rolls back. */
class Raced extends Error {
  override name = 'Raced';
}

/** A service's tags for conditional requests: of the service, and of its canary state. */
export interface ServiceTags {
  service: string;
  canary: string;
}

/** The service's tag: its rollouts and revisions, not how far the runtime has got. */
const serviceTag = (row: ServiceRow) =>
  etagOf(['service', row.name, row.environment, row.rollout, row.current_revision, row.previous_revision, row.canary_revision, row.canary_weight]);

/** The canary state's tag: which revisions take what share of the traffic. */
const canaryTag = (row: ServiceRow) => etagOf(['canary', row.name, row.environment, row.current_revision, row.canary_revision, row.canary_weight]);

/** Throws `Raced`: the service changed since this change read it. */
function raced(name: string, env: Environment): never {
  throw new Raced(`${name} in ${env} was changed by another request since it was read`);
}

/**
 * Runs a change (read, decide, write) until it does not lose a race (`Raced`): each attempt reads
 * the service afresh, so checks and preconditions see what it is now; 409 after MAX_ATTEMPTS.
 */
async function retrying<T>(change: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await change();
    } catch (err) {
      if (!(err instanceof Raced)) throw err;
      if (attempt >= MAX_ATTEMPTS) throw conflict(`${err.message}, ${MAX_ATTEMPTS} times in a row; try again`);
    }
  }
}

export interface ServiceRecordsDeps {
  store: Store;
  runtime: DeploymentRuntime;
  now: () => number;
}

export function createServiceRecords({ store, runtime, now }: ServiceRecordsDeps) {
  const repo = store.services;
  const iso = () => new Date(now()).toISOString();
  const readiness = createReadiness();
  /** The tags of the row each view (detail, change, canary state) was made from: its response's ETag. */
  const tagsOfView = new WeakMap<object, ServiceTags>();
  const tagged = <T extends object>(view: T, row: ServiceRow): T => {
    tagsOfView.set(view, { service: serviceTag(row), canary: canaryTag(row) });
    return view;
  };

  async function serviceOr404(name: string, env: Environment): Promise<ServiceRow> {
    const row = SERVICE_NAME.test(name) ? await repo.get(name, env) : undefined;
    if (!row) throw notFound(`no service ${name} in ${env}`);
    return row;
  }

  const revisionRow = async (row: ServiceRow, revision: string, on: ServiceRepo = repo): Promise<RevisionRow> =>
    (await on.revision(row.name, row.environment, revision))!;

  /** The current revision's image, read along with the row unless the row has moved on since. */
  async function imageOf(row: ServiceRow & Partial<CurrentImage>): Promise<string> {
    return row.current_image_of === row.current_revision && row.current_image ? row.current_image : (await revisionRow(row, row.current_revision)).image;
  }

  /** What the runtime should be running for a service row (read on `on`: a transaction reads what it wrote). */
  async function targetOf(row: ServiceRow, on: ServiceRepo = repo): Promise<RolloutTarget> {
    const deployed = await revisionRow(row, row.canary_revision ?? row.current_revision, on);
    const stable = row.canary_revision ? await revisionRow(row, row.current_revision, on) : undefined;
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
  async function listed(row: ServiceRow, image?: string): Promise<Service> {
    const byRevision = readiness.of(row.name, row.environment, row.rollout);
    const endpoint = runtime.endpointOf?.(row.environment);
    return {
      name: row.name,
      environment: row.environment,
      status: row.status,
      image: image ?? (await imageOf(row)),
      replicas: { desired: row.desired_replicas, ready: row.ready_replicas, ...(byRevision && { by_revision: byRevision }) },
      current_revision: row.current_revision,
      last_deployed_at: row.last_deployed_at,
      runtime: runtime.nameOf(row.environment),
      ...(endpoint ? { endpoint } : {}),
      ...(row.canary_revision ? { canary: { revision: row.canary_revision, weight: row.canary_weight ?? 0 } } : {}),
      ...(row.status === 'failed' && row.status_message !== null && { status_message: row.status_message }),
    };
  }

  /** Writes `next` in place of `previous` (a new service when undefined), or throws `Raced`. */
  async function replace(tx: Repos, next: ServiceRow, previous: ServiceRow | undefined): Promise<void> {
    if (!(await tx.services.put(next, previous))) raced(next.name, next.environment);
  }

  /**
   * Commits a new rollout in one transaction: `next` in place of `previous`, with `writes`
   * (revisions, audit); then tells the runtime what to run, read in the transaction.
   */
  async function commit(next: ServiceRow, previous: ServiceRow | undefined, writes: (tx: Repos) => Promise<void>): Promise<ServiceRow> {
    const target = await store.transaction(async (tx) => {
      await replace(tx, next, previous);
      await writes(tx);
      return targetOf(next, tx.services);
    });
    runtime.apply(target);
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
    /** Runs `change` as one transaction (a service row in place of what was read: `replace`; its audit). */
    transact: <T>(change: (tx: Repos) => Promise<T>): Promise<T> => store.transaction(change),
    raced,
    replace,
    commit,
    retrying,

    serviceTag,
    canaryTag,
    /** The tags of the row a view (`detail`, `change`, `canaryView`) shows, read or written with it; none for other objects. */
    tagsOf: (view: object): ServiceTags | undefined => tagsOfView.get(view),

    /** Appends a deployment audit event, in the transaction `tx`. */
    audit: (tx: Repos, event: string, row: { name: string; environment: Environment }, revision: string | null, actor: string, details = {}) =>
      tx.services.audit({ event, service: row.name, environment: row.environment, revision, actor, at: iso(), details }),

    listed: (row: ServiceRow): Promise<Service> => listed(row),

    /** The service as read alone: with its previous revision and whether the runtime caught up. */
    async detail(row: ServiceRow): Promise<ServiceDetail> {
      return tagged({ ...(await listed(row)), previous_revision: row.previous_revision, gitops_sync_status: row.sync_status }, row);
    },

    /** The service as a change (apply, rollback, promote) leaves it; `image` for a dry run's would-be image. */
    async change(row: ServiceRow, dryRun: boolean, image?: string): Promise<ServiceChange> {
      return tagged({ ...(await listed(row, image)), previous_revision: row.previous_revision, dry_run: dryRun }, row);
    },

    /** The canary state: which revision takes what share of the traffic. */
    async canaryView(row: ServiceRow): Promise<CanaryState> {
      const stable = { revision: row.current_revision, image: await imageOf(row) };
      const weight = row.canary_weight ?? 0;
      const canary = row.canary_revision ? { revision: row.canary_revision, image: (await revisionRow(row, row.canary_revision)).image, weight } : null;
      return tagged(
        {
          service: row.name,
          environment: row.environment,
          canary_active: row.canary_revision !== null,
          stable: { revision: stable.revision, image: stable.image, weight: row.canary_revision ? 100 - weight : 100 },
          canary,
        },
        row,
      );
    },
  };
}
export type ServiceRecords = ReturnType<typeof createServiceRecords>;
