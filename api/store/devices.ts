/** @module The device registry: ids, agent token hashes, labels and the agent's presence. */
import { sql } from 'kysely';
import { presenceOf } from './device-presence';
import { affected, atomically, type Executor, type Row } from './schema';

export type AgentStatus = 'online' | 'offline';

export interface Device {
  device_id: string;
  agent_status: AgentStatus;
  last_seen_at: string | null;
  labels: Record<string, string>;
  agent_version: string | null;
  created_at: string;
  /**
   * The port-forward allow-list its agent announced when it last connected (`HOST:PORT`
   * patterns); null when it announced none: that agent does not forward ports.
   */
  forward_allow: string[] | null;
}

const COLUMNS = ['device_id', 'agent_status', 'last_seen_at', 'labels', 'agent_version', 'created_at', 'forward_allow'] as const;

/** The columns a `Device` is made of, as the database holds them. */
type DeviceRow = Pick<Row<'devices'>, (typeof COLUMNS)[number]>;

const toDevice = (row: DeviceRow): Device => ({
  device_id: row.device_id,
  agent_status: row.agent_status as AgentStatus,
  last_seen_at: row.last_seen_at,
  labels: JSON.parse(row.labels) as Record<string, string>,
  agent_version: row.agent_version,
  created_at: row.created_at,
  forward_allow: row.forward_allow === null ? null : (JSON.parse(row.forward_allow) as string[]),
});

/** A change of an agent's presence, as a batch of them records it. */
export type PresenceChange =
  | {
      kind: 'online';
      deviceId: string;
      agentVersion: string | null;
      forwardAllow: readonly string[] | null;
      at: string;
      /** The URL of the node that holds the agent (a cluster's edge), where its streams are joined; none: this server's. */
      url?: string | undefined;
    }
  | { kind: 'offline'; deviceId: string; at: string };

export type { AgentConnect } from './device-presence';

export interface DeviceQuery {
  agent_status?: AgentStatus | undefined;
  limit: number;
  offset: number;
}

/** Devices a statement of `applyPresence` changes at most (6 parameters each, under every driver's limit). */
const PRESENCE_BATCH = 500;

/**
 * Records the final presence of many devices in one UPDATE … FROM a list of values (valid on
 * SQLite 3.33+ and PostgreSQL alike): thousands of changes a second cost a few statements.
 */
async function applyBatch(db: Executor, changes: readonly PresenceChange[]): Promise<void> {
  const rows = changes.map((c) =>
    c.kind === 'online'
      ? sql`(${c.deviceId}, 'online', ${c.agentVersion}, ${c.forwardAllow === null ? null : JSON.stringify(c.forwardAllow)}, ${c.at}, 1, ${c.url ?? null})`
      : sql`(${c.deviceId}, 'offline', NULL, NULL, ${c.at}, 0, NULL)`,
  );
  await sql`WITH v (device_id, agent_status, agent_version, forward_allow, at, is_online, url) AS (VALUES ${sql.join(rows)})
    UPDATE devices SET agent_status = v.agent_status,
      agent_version = CASE WHEN v.is_online = 1 THEN v.agent_version ELSE devices.agent_version END,
      forward_allow = CASE WHEN v.is_online = 1 THEN v.forward_allow ELSE devices.forward_allow END,
      presence_url = v.url,
      last_seen_at = v.at
    FROM v WHERE devices.device_id = v.device_id`.execute(db);
}

export function createDeviceRepo(db: Executor) {
  const markOnline = async (deviceId: string, agentVersion: string | null, at: string, forwardAllow: readonly string[] | null = null): Promise<void> => {
    await db
      .updateTable('devices')
      .set({
        agent_status: 'online',
        agent_version: agentVersion,
        forward_allow: forwardAllow === null ? null : JSON.stringify(forwardAllow),
        last_seen_at: at,
      })
      .where('device_id', '=', deviceId)
      .execute();
  };
  const markOffline = async (deviceId: string, at: string): Promise<void> => {
    await db.updateTable('devices').set({ agent_status: 'offline', last_seen_at: at }).where('device_id', '=', deviceId).execute();
  };
  const online = () => db.selectFrom('devices').where('agent_status', '=', 'online');

  return {
    /** Inserts a device; throws a unique violation (`isUniqueViolation`) if the id or the token hash exists. */
    async insert(deviceId: string, tokenHash: string, labels: Record<string, string>, createdAt: string): Promise<void> {
      await db
        .insertInto('devices')
        .values({ device_id: deviceId, agent_token_hash: tokenHash, labels: JSON.stringify(labels), created_at: createdAt })
        .execute();
    },
    async get(deviceId: string): Promise<Device | undefined> {
      const row = await db.selectFrom('devices').select(COLUMNS).where('device_id', '=', deviceId).executeTakeFirst();
      return row && toDevice(row);
    },
    /** The device whose agent token has this hash. */
    idByTokenHash: async (tokenHash: string): Promise<string | undefined> =>
      (await db.selectFrom('devices').select('device_id').where('agent_token_hash', '=', tokenHash).executeTakeFirst())?.device_id,
    async list(q: DeviceQuery): Promise<{ items: Device[]; total: number }> {
      const status = q.agent_status;
      const filtered = () => db.selectFrom('devices').where((eb) => eb.and(status === undefined ? [] : [eb('agent_status', '=', status)]));
      const [items, count] = await Promise.all([
        filtered().select(COLUMNS).orderBy('device_id').limit(q.limit).offset(q.offset).execute(),
        filtered()
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow(),
      ]);
      return { items: items.map(toDevice), total: Number(count.n) };
    },
    delete: async (deviceId: string): Promise<boolean> => affected(await db.deleteFrom('devices').where('device_id', '=', deviceId).executeTakeFirst()) === 1,
    /** The hash of the device's agent token (its ETag changes with the token). */
    tokenHash: async (deviceId: string): Promise<string | undefined> =>
      (await db.selectFrom('devices').select('agent_token_hash').where('device_id', '=', deviceId).executeTakeFirst())?.agent_token_hash,
    /** The hashes of the agent tokens of those of `deviceIds` that exist, by device id (at most a few thousand ids). */
    async tokenHashes(deviceIds: readonly string[]): Promise<Map<string, string>> {
      if (deviceIds.length === 0) return new Map();
      const rows = await db
        .selectFrom('devices')
        .select(['device_id', 'agent_token_hash'])
        .where('device_id', 'in', [...new Set(deviceIds)])
        .execute();
      return new Map(rows.map((r) => [r.device_id, r.agent_token_hash]));
    },
    /** Replaces the device's agent token; false if there is no such device. */
    replaceTokenHash: async (deviceId: string, hash: string): Promise<boolean> =>
      affected(await db.updateTable('devices').set({ agent_token_hash: hash }).where('device_id', '=', deviceId).executeTakeFirst()) === 1,
    markOnline,
    markOffline,
    /** Records heartbeats of many devices in one transaction. */
    markSeen: (seenAt: Map<string, string>): Promise<void> =>
      atomically(db, async (tx) => {
        for (const [deviceId, at] of seenAt) await tx.updateTable('devices').set({ last_seen_at: at }).where('device_id', '=', deviceId).execute();
      }),
    /**
     * Records many presence changes in one transaction, in their order (a cluster's control node,
     * thousands a second).
     */
    applyPresence: (changes: readonly PresenceChange[]): Promise<void> =>
      atomically(db, async (tx) => {
        // A device's last change is its state: one statement per PRESENCE_BATCH devices.
        const last = [...new Map(changes.map((c) => [c.deviceId, c])).values()];
        for (let i = 0; i < last.length; i += PRESENCE_BATCH) await applyBatch(tx, last.slice(i, i + PRESENCE_BATCH));
      }),
    ...presenceOf(db),
    /** The devices the database holds online. */
    onlineIds: async (): Promise<string[]> => (await online().select('device_id').execute()).map((r) => r.device_id),
    /** At start-up no agent is connected yet, whatever the database says; how many were online. */
    markAllOffline: async (): Promise<number> =>
      affected(
        await db
          .updateTable('devices')
          .set({ agent_status: 'offline', presence_node: null, presence_url: null })
          .where('agent_status', '=', 'online')
          .executeTakeFirst(),
      ),
    async onlineCount(): Promise<number> {
      const row = await online()
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow();
      return Number(row.n);
    },
  };
}
export type DeviceRepo = ReturnType<typeof createDeviceRepo>;
