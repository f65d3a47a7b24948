/**
 * @module Rolling a service back (docs/http-api.md, deployments): a new rollout of an earlier
 * revision's image and stored spec (the previous one unless named), which also ends a canary.
 * Staging and prod need a platform engineer.
 */
import type { Logger } from '../../shared/log';
import type { ServiceChange } from '../../shared/api/services';
import { requireAccess } from '../access';
import { conflict, notFound } from '../errors';
import { unconditional, type Precondition } from '../preconditions';
import type { Role } from '../roles';
import type { Environment, ServiceRow } from '../store/services';
import type { Principal } from '../store/tokens';
import type { ServiceRecords } from './records';

const ROLLBACK_ROLE: Record<Environment, Role> = { dev: 'developer', staging: 'platform-engineer', prod: 'platform-engineer' };

export function createRollback(records: ServiceRecords, log: Logger) {
  const { repo, iso, serviceOr404, serviceTag, change, commit, retrying, audit } = records;

  /** A new deployment of an earlier revision's image and stored spec. */
  return async function rollback(
    principal: Principal,
    env: Environment,
    name: string,
    revision: string | undefined,
    precondition: Precondition = unconditional,
  ): Promise<ServiceChange> {
    requireAccess(principal, 'deployments:write', ROLLBACK_ROLE[env], `rolling back in ${env}`);
    return retrying(async () => {
      const row = await serviceOr404(name, env);
      precondition(serviceTag(row));
      const targetRevision = revision ?? row.previous_revision;
      if (!targetRevision) throw conflict(`${name} in ${env} has no previous revision to roll back to`);
      const target = await repo.revision(name, env, targetRevision);
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
        status_message: null,
      };
      await commit(next, row, async (tx) => {
        await tx.services.putRevision({ ...target, deployed_at: at, deployed_by: principal.username });
        await audit(tx, 'service.rolled_back', next, targetRevision, principal.username, { from: row.current_revision });
      });
      log.info('service rolled back', { service: name, environment: env, from: row.current_revision, to: targetRevision });
      return change(next, false);
    });
  };
}
