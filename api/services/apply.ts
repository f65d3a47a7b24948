/**
 * @module Applying a service spec (docs/http-api.md, deployments): validated, then, unless it is a
 * dry run, committed as a new rollout with its revision and audit rows. A new revision of an
 * existing service under the `canary` strategy is deployed beside the stable one with a share of
 * the traffic; anything else replaces the current revision, which becomes `previous`.
 */
import type { Logger } from '../../shared/log';
import type { ServiceChange } from '../../shared/api/services';
import { requireAccess } from '../access';
import { ApiError } from '../errors';
import { unconditional, type Precondition } from '../preconditions';
import type { Environment, RevisionRow, ServiceRow } from '../store/services';
import type { Principal } from '../store/tokens';
import { WRITE_ROLE, type ServiceRecords } from './records';
import { parseSpec } from './spec';

export function createApply(records: ServiceRecords, log: Logger) {
  const { repo, iso, imageOf, change, commit, retrying, audit, serviceTag } = records;

  /** Validates a service spec and, unless `dryRun`, deploys it (as a new rollout of the service as it is when it commits). */
  return async function apply(
    principal: Principal,
    env: Environment,
    yaml: string,
    dryRun: boolean,
    precondition: Precondition = unconditional,
  ): Promise<ServiceChange> {
    requireAccess(principal, 'deployments:write', WRITE_ROLE[env], `deploying to ${env}`);
    const parsed = parseSpec(yaml);
    if (!parsed.ok) {
      throw new ApiError('invalid_spec', `the service spec is invalid: ${parsed.details.length} problem(s)`, parsed.details);
    }
    const { spec, revision } = parsed;
    return retrying(async () => {
      const at = iso();
      const existing = await repo.get(spec.service.name, env);
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
        status_message: null,
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
            previous_revision: existing && existing.current_revision !== revision ? existing.current_revision : (existing?.previous_revision ?? null),
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
        const image = canary ? await imageOf(existing) : spec.service.image;
        return change(next, true, image);
      }
      await commit(next, existing, async (tx) => {
        await tx.services.putRevision(revisionRow);
        await audit(tx, 'service.applied', next, revision, principal.username, {
          strategy: canary ? 'canary' : 'rolling',
          image: spec.service.image,
          replicas: spec.deployment.replicas,
        });
      });
      log.info('service applied', { service: next.name, environment: env, revision, strategy: canary ? 'canary' : 'rolling' });
      return change(next, false);
    });
  };
}
