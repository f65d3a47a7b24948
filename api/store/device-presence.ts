/**
 * @module A device's presence as peers record it (docs/peers.md): every connect of its agent bumps
 * the device's generation and names the node that holds it; a disconnect counts only for the
 * generation its connect got, so a late disconnect on one node never hides a newer connect on
 * another; a node that died has its agents taken offline by whoever does the housekeeping.
 */
import { affected, type Executor } from './schema';

/** An agent's connect, as `connect` records it. */
export interface AgentConnect {
  /** The run id of the node that holds it, and the URL clients reach that node at. */
  node: string;
  url: string;
  agentVersion: string | null;
  forwardAllow: readonly string[] | null;
  at: string;
}

/** The presence operations of the device repository, on `db`. */
export function presenceOf(db: Executor) {
  const online = () => db.selectFrom('devices').where('agent_status', '=', 'online');
  return {
    /**
     * Records an agent connected to `node`: online, and the device's presence generation bumped.
     * Returns that generation (its disconnect must name it), or undefined for an unknown device.
     */
    async connect(deviceId: string, c: AgentConnect): Promise<number | undefined> {
      const row = await db
        .updateTable('devices')
        .set((eb) => ({
          agent_status: 'online',
          agent_version: c.agentVersion,
          forward_allow: c.forwardAllow === null ? null : JSON.stringify(c.forwardAllow),
          last_seen_at: c.at,
          presence_generation: eb('presence_generation', '+', 1),
          presence_node: c.node,
          presence_url: c.url,
        }))
        .where('device_id', '=', deviceId)
        .returning('presence_generation')
        .executeTakeFirst();
      return row === undefined ? undefined : Number(row.presence_generation);
    },
    /**
     * Records the agent of connection `generation` gone: offline, unless a newer connect (on any
     * node) happened since. True when it changed the presence.
     */
    disconnect: async (deviceId: string, generation: number, at: string): Promise<boolean> =>
      affected(
        await db
          .updateTable('devices')
          .set({ agent_status: 'offline', last_seen_at: at, presence_node: null, presence_url: null })
          .where('device_id', '=', deviceId)
          .where('presence_generation', '=', generation)
          .where('agent_status', '=', 'online')
          .executeTakeFirst(),
      ) === 1,
    /**
     * Takes offline every agent held by a node not in `liveNodes` (it died); returns their devices.
     * Agents held through a cluster's control node name no node and are left alone.
     */
    async releaseUnheld(liveNodes: readonly string[], at: string): Promise<string[]> {
      const rows = await online()
        .select('device_id')
        .where('presence_node', 'is not', null)
        .where((eb) => (liveNodes.length === 0 ? eb.lit(true) : eb('presence_node', 'not in', [...liveNodes])))
        .execute();
      const released: string[] = [];
      for (const { device_id } of rows) {
        const changed = await db
          .updateTable('devices')
          .set({ agent_status: 'offline', last_seen_at: at, presence_node: null, presence_url: null })
          .where('device_id', '=', device_id)
          .where('agent_status', '=', 'online')
          .where('presence_node', 'is not', null)
          .where((eb) => (liveNodes.length === 0 ? eb.lit(true) : eb('presence_node', 'not in', [...liveNodes])))
          .executeTakeFirst();
        if (affected(changed) === 1) released.push(device_id);
      }
      return released;
    },
    /** The URL of the node that holds the device's agent, when it is online there. */
    streamUrlOf: async (deviceId: string): Promise<string | undefined> =>
      (await online().select('presence_url').where('device_id', '=', deviceId).executeTakeFirst())?.presence_url ?? undefined,
  };
}
