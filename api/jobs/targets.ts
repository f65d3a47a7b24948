/**
 * @module A job's target turned into its devices, once, when it is created (CONTRACT 10.2): the
 * set is fixed from then on. Explicit ids must all be registered; a fleet group is read with the
 * tenant rules of the fleet interface (the token holds the tenant and `fleet:read`, else 403; a
 * group of another tenant, or none, is 404, so no tenant's groups leak); a label selector matches
 * the devices carrying every label. A target that names no device is 422: nothing would run.
 */
import { JOB_LIMITS, type JobTarget } from '../../shared/api/jobs';
import { hasScope } from '../access';
import { ApiError, forbidden, notFound } from '../errors';
import type { Store } from '../store/index';
import type { Principal } from '../store/tokens';

/** How many unknown ids a 422 names (the rest are counted). */
const NAMED_UNKNOWN = 20;

const unprocessable = (message: string) => new ApiError('unprocessable_entity', message);

async function explicitDevices(store: Store, ids: readonly string[]): Promise<string[]> {
  const unique = [...new Set(ids)];
  const found = await store.jobs.existingDevices(unique);
  const unknown = unique.filter((id) => !found.has(id));
  if (unknown.length > 0) {
    const named = unknown.slice(0, NAMED_UNKNOWN).join(', ');
    const more = unknown.length > NAMED_UNKNOWN ? ` and ${unknown.length - NAMED_UNKNOWN} more` : '';
    throw new ApiError(
      'unprocessable_entity',
      `no such device${unknown.length > 1 ? 's' : ''}: ${named}${more}`,
      unknown.slice(0, NAMED_UNKNOWN).map((id) => ({ path: 'target.device_ids', message: `no device ${id}` })),
    );
  }
  return unique;
}

async function groupDevices(store: Store, p: Principal, tenant: string, groupId: string): Promise<string[]> {
  // The fleet interface's own checks, in its order: the tenant, then the scope, then the group.
  if (!p.tenants.includes('*') && !p.tenants.includes(tenant)) throw forbidden(`this token is not granted tenant ${tenant}`);
  if (!hasScope(p, 'fleet:read')) throw forbidden(`a fleet group target requires scope fleet:read; this token has ${p.scopes.join(', ') || 'no scopes'}`);
  const devices = await store.jobs.devicesOfGroup(tenant, groupId);
  if (devices === undefined) throw notFound(`no group ${groupId} in tenant ${tenant}`);
  if (devices.length === 0) throw unprocessable(`group ${groupId} has no vehicle with a registered device`);
  return devices;
}

async function devicesOf(store: Store, p: Principal, target: JobTarget): Promise<string[]> {
  if ('device_ids' in target) return explicitDevices(store, target.device_ids);
  if ('group_id' in target) return groupDevices(store, p, target.tenant, target.group_id);
  const devices = await store.jobs.devicesWithLabels(target.labels);
  if (devices.length === 0) throw unprocessable(`no device carries the labels ${JSON.stringify(target.labels)}`);
  return devices;
}

/** The devices a job over `target` runs on, in the order its executions take. */
export async function resolveTarget(store: Store, p: Principal, target: JobTarget): Promise<string[]> {
  const devices = await devicesOf(store, p, target);
  // The limit of an explicit list holds for a group or a selector too: a job is at most this many executions.
  if (devices.length > JOB_LIMITS.maxDevices) {
    throw unprocessable(`the target names ${devices.length} devices; a job runs on at most ${JOB_LIMITS.maxDevices}`);
  }
  return devices;
}
