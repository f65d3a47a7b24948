/**
 * @module The queries that fix a job's devices when it is created (CONTRACT 10.2, targets), and
 * the one that says which blobs a device may fetch now. Part of the jobs repository (`./jobs.ts`).
 */
import type { Executor } from './schema';

/** Ids per `IN (…)` list: far below both databases' limits on bound parameters. */
const IN_BATCH = 1000;

export function createJobTargetQueries(db: Executor) {
  return {
    /** Those of `deviceIds` that are registered. */
    async existingDevices(deviceIds: readonly string[]): Promise<Set<string>> {
      const found = new Set<string>();
      for (let from = 0; from < deviceIds.length; from += IN_BATCH) {
        const rows = await db
          .selectFrom('devices')
          .select('device_id')
          .where('device_id', 'in', deviceIds.slice(from, from + IN_BATCH))
          .execute();
        for (const r of rows) found.add(r.device_id);
      }
      return found;
    },

    /**
     * The registered devices of a fleet group's vehicles, by vehicle id; undefined when the tenant
     * has no such group. A vehicle whose device is not registered has no agent to run anything.
     */
    async devicesOfGroup(tenant: string, groupId: string): Promise<string[] | undefined> {
      const group = await db.selectFrom('fleet_groups').select('group_id').where('tenant_id', '=', tenant).where('group_id', '=', groupId).executeTakeFirst();
      if (!group) return undefined;
      const rows = await db
        .selectFrom('fleet_vehicles as v')
        .innerJoin('devices as d', 'd.device_id', 'v.device_id')
        .select('d.device_id')
        .where('v.tenant_id', '=', tenant)
        .where('v.group_id', '=', groupId)
        .orderBy('v.vehicle_id')
        .execute();
      return [...new Set(rows.map((r) => r.device_id))];
    },

    /**
     * The devices that carry every one of `labels`, by id. Labels are JSON text, read here rather
     * than with each database's own JSON functions, so both stores answer alike (a registry of
     * tens of thousands of devices is a few megabytes).
     */
    async devicesWithLabels(labels: Record<string, string>): Promise<string[]> {
      const wanted = Object.entries(labels);
      const rows = await db.selectFrom('devices').select(['device_id', 'labels']).orderBy('device_id').execute();
      return rows
        .filter((r) => {
          const has = JSON.parse(r.labels) as Record<string, string>;
          return wanted.every(([k, v]) => Object.hasOwn(has, k) && has[k] === v);
        })
        .map((r) => r.device_id);
    },

    /** Whether `deviceId` has an execution of a file-push job of `blobId` in progress (it may fetch the blob). */
    async mayFetchBlob(deviceId: string, blobId: string): Promise<boolean> {
      const rows = await db
        .selectFrom('job_executions as e')
        .innerJoin('jobs as j', 'j.job_id', 'e.job_id')
        .select('j.spec')
        .where('e.device_id', '=', deviceId)
        .where('e.status', '=', 'in_progress')
        .where('j.kind', '=', 'file-push')
        .execute();
      return rows.some((r) => (JSON.parse(r.spec) as { blob_id?: unknown }).blob_id === blobId);
    },
  };
}
