/**
 * @module A service's canary (docs/http-api.md, deployments): its state, the share of traffic it
 * takes (weight 0 halts it, 100 promotes it), and its promotion. Only a canary whose rollout is
 * complete is promoted, so a promoted service is `healthy` in the response and the reads after
 * it, and `healthy` keeps meaning every replica ready; before that a 409 says how far it is.
 */
import type { Logger } from '../../shared/log';
import type { CanaryState, ServiceChange } from '../../shared/api/services';
import { requireAccess } from '../access';
import { conflict } from '../errors';
import { unconditional, type Precondition } from '../preconditions';
import type { Environment, ServiceRow } from '../store/services';
import type { Principal } from '../store/tokens';
import { WRITE_ROLE, type ServiceRecords } from './records';
import type { DeploymentRuntime } from './runtime';
import { syncStatus } from './status';

/** A 409 with how far the canary's rollout is, unless it may take all traffic. */
function requirePromotable(row: ServiceRow): void {
  const what = `canary ${row.canary_revision} of ${row.name} in ${row.environment}`;
  const ready = `${row.ready_replicas} of ${row.desired_replicas} replicas ready`;
  if (row.status === 'failed') throw conflict(`${what} failed to roll out (${ready}); roll back or apply again`);
  if (row.ready_replicas < row.desired_replicas) {
    throw conflict(`${what} has ${ready}; promote it once all are ready`);
  }
}

export function createCanary(records: ServiceRecords, runtime: DeploymentRuntime, log: Logger) {
  const { transact, serviceOr404, canaryTag, canaryView, change, replace, retrying, audit } = records;

  /** The service `name` with a canary, as read now; the caller's precondition is checked on its canary state. */
  async function withCanary(env: Environment, name: string, precondition: Precondition): Promise<ServiceRow> {
    const row = await serviceOr404(name, env);
    precondition(canaryTag(row));
    if (!row.canary_revision) throw conflict(`${name} in ${env} has no canary deployed`);
    return row;
  }

  /** The canary becomes current with all traffic; the old stable revision becomes `previous`. */
  async function promoteRow(principal: Principal, row: ServiceRow): Promise<ServiceRow> {
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
      status_message: null,
    };
    await transact(async (tx) => {
      await replace(tx, next, row);
      await audit(tx, 'canary.promoted', row, canary, principal.username, { previous: row.current_revision });
    });
    runtime.setCanaryWeight(row.name, row.environment, 100);
    log.info('canary promoted', { service: row.name, environment: row.environment, revision: canary });
    return next;
  }

  /** Weight 0 halts, 100 promotes, anything between shifts traffic. */
  async function setWeight(
    principal: Principal,
    env: Environment,
    name: string,
    weight: number,
    precondition: Precondition = unconditional,
  ): Promise<CanaryState> {
    requireAccess(principal, 'deployments:write', WRITE_ROLE[env], `changing canaries in ${env}`);
    const next = await retrying(async () => {
      const row = await withCanary(env, name, precondition);
      if (weight === 100) return promoteRow(principal, row);
      const weighted = { ...row, canary_weight: weight };
      await transact(async (tx) => {
        await replace(tx, weighted, row);
        await audit(tx, weight === 0 ? 'canary.halted' : 'canary.weight_set', row, row.canary_revision, principal.username, { weight });
      });
      runtime.setCanaryWeight(name, env, weight);
      return weighted;
    });
    return canaryView(next);
  }

  return {
    async canary(principal: Principal, env: Environment, name: string): Promise<CanaryState> {
      requireAccess(principal, 'deployments:read', 'developer');
      return canaryView(await serviceOr404(name, env));
    },

    setWeight,

    halt: (principal: Principal, env: Environment, name: string, precondition: Precondition = unconditional) =>
      setWeight(principal, env, name, 0, precondition),

    async promote(principal: Principal, env: Environment, name: string, precondition: Precondition = unconditional): Promise<ServiceChange> {
      requireAccess(principal, 'deployments:write', WRITE_ROLE[env], `changing canaries in ${env}`);
      const next = await retrying(async () => promoteRow(principal, await withCanary(env, name, precondition)));
      return change(next, false);
    },
  };
}
