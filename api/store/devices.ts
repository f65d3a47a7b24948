/** @module The device registry: ids, agent token hashes, labels and the agent's presence. */
import type { Db } from './db';

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

interface DeviceRow extends Omit<Device, 'labels' | 'forward_allow'> {
  labels: string;
  forward_allow: string | null;
}

const toDevice = (row: DeviceRow): Device => ({
  device_id: row.device_id,
  agent_status: row.agent_status,
  last_seen_at: row.last_seen_at,
  labels: JSON.parse(row.labels) as Record<string, string>,
  agent_version: row.agent_version,
  created_at: row.created_at,
  forward_allow: row.forward_allow === null ? null : (JSON.parse(row.forward_allow) as string[]),
});

const COLUMNS = 'device_id, agent_status, last_seen_at, labels, agent_version, created_at, forward_allow';

/** A change of an agent's presence, as a batch of them records it. */
export type PresenceChange =
  | { kind: 'online'; deviceId: string; agentVersion: string | null; forwardAllow: readonly string[] | null; at: string }
  | { kind: 'offline'; deviceId: string; at: string };

export interface DeviceQuery {
  agent_status?: AgentStatus | undefined;
  limit: number;
  offset: number;
}

export function createDeviceRepo(db: Db) {
  const insert = db.prepare<[string, string, string, string]>('INSERT INTO devices (device_id, agent_token_hash, labels, created_at) VALUES (?, ?, ?, ?)');
  const byId = db.prepare<[string], DeviceRow>(`SELECT ${COLUMNS} FROM devices WHERE device_id = ?`);
  const byTokenHash = db.prepare<[string], { device_id: string }>('SELECT device_id FROM devices WHERE agent_token_hash = ?');
  const page = db.prepare<[string | null, string | null, number, number], DeviceRow>(
    `SELECT ${COLUMNS} FROM devices WHERE (? IS NULL OR agent_status = ?) ORDER BY device_id LIMIT ? OFFSET ?`,
  );
  const count = db.prepare<[string | null, string | null], { n: number }>('SELECT COUNT(*) AS n FROM devices WHERE (? IS NULL OR agent_status = ?)');
  const remove = db.prepare<[string]>('DELETE FROM devices WHERE device_id = ?');
  const tokenHash = db.prepare<[string], { agent_token_hash: string }>('SELECT agent_token_hash FROM devices WHERE device_id = ?');
  const setTokenHash = db.prepare<[string, string]>('UPDATE devices SET agent_token_hash = ? WHERE device_id = ?');
  const online = db.prepare<[string | null, string | null, string, string]>(
    "UPDATE devices SET agent_status = 'online', agent_version = ?, forward_allow = ?, last_seen_at = ? WHERE device_id = ?",
  );
  const offline = db.prepare<[string, string]>("UPDATE devices SET agent_status = 'offline', last_seen_at = ? WHERE device_id = ?");
  const seen = db.prepare<[string, string]>('UPDATE devices SET last_seen_at = ? WHERE device_id = ?');
  const allOffline = db.prepare("UPDATE devices SET agent_status = 'offline' WHERE agent_status = 'online'");
  const onlineIds = db.prepare<[], { device_id: string }>("SELECT device_id FROM devices WHERE agent_status = 'online'");
  const onlineCount = db.prepare<[], { n: number }>("SELECT COUNT(*) AS n FROM devices WHERE agent_status = 'online'");

  return {
    /** Inserts a device; throws SQLITE_CONSTRAINT_PRIMARYKEY if the id exists. */
    insert(deviceId: string, tokenHash: string, labels: Record<string, string>, createdAt: string): void {
      insert.run(deviceId, tokenHash, JSON.stringify(labels), createdAt);
    },
    get(deviceId: string): Device | undefined {
      const row = byId.get(deviceId);
      return row && toDevice(row);
    },
    /** The device whose agent token has this hash. */
    idByTokenHash: (tokenHash: string): string | undefined => byTokenHash.get(tokenHash)?.device_id,
    list(q: DeviceQuery): { items: Device[]; total: number } {
      const status = q.agent_status ?? null;
      return {
        items: page.all(status, status, q.limit, q.offset).map(toDevice),
        total: count.get(status, status)!.n,
      };
    },
    delete: (deviceId: string): boolean => remove.run(deviceId).changes === 1,
    /** The hash of the device's agent token (its ETag changes with the token). */
    tokenHash: (deviceId: string): string | undefined => tokenHash.get(deviceId)?.agent_token_hash,
    /** Replaces the device's agent token; false if there is no such device. */
    replaceTokenHash: (deviceId: string, hash: string): boolean => setTokenHash.run(hash, deviceId).changes === 1,
    markOnline: (deviceId: string, agentVersion: string | null, at: string, forwardAllow: readonly string[] | null = null): void => {
      online.run(agentVersion, forwardAllow === null ? null : JSON.stringify(forwardAllow), at, deviceId);
    },
    markOffline: (deviceId: string, at: string): void => {
      offline.run(at, deviceId);
    },
    /** Records heartbeats of many devices in one transaction. */
    markSeen: db.transaction((seenAt: Map<string, string>): void => {
      for (const [deviceId, at] of seenAt) seen.run(at, deviceId);
    }),
    /** Records many presence changes in one transaction (a cluster's control node, thousands a second). */
    applyPresence: db.transaction((changes: readonly PresenceChange[]): void => {
      for (const c of changes) {
        if (c.kind === 'online') online.run(c.agentVersion, c.forwardAllow === null ? null : JSON.stringify(c.forwardAllow), c.at, c.deviceId);
        else offline.run(c.at, c.deviceId);
      }
    }),
    /** The devices the database holds online. */
    onlineIds: (): string[] => onlineIds.all().map((r) => r.device_id),
    /** At start-up no agent is connected yet, whatever the database says. */
    markAllOffline: (): number => allOffline.run().changes,
    onlineCount: (): number => onlineCount.get()!.n,
  };
}
export type DeviceRepo = ReturnType<typeof createDeviceRepo>;
