/**
 * @module Where the relay reports agents coming and going (docs/peers.md, presence): recorded with
 * the node that holds the agent and a connection generation, and published as events. Every connect
 * bumps the device's generation in the database; a disconnect clears the presence only while the
 * generation is still the one its connect got, so a late disconnect on one node (the agent already
 * moved to another peer) never hides the newer connect. Changes of one device are recorded in the
 * order they happened here.
 */
import type { PresenceChange } from '../store/devices';
import type { Store } from '../store/index';
import type { ThisNode } from '../housekeeping';
import type { EventHub } from '../events/hub';

export function createPresence(store: Store, node: ThisNode, events: EventHub) {
  /** The generation of each agent connected here, as its connect recorded it. */
  const generations = new Map<string, number>();
  /** Each device's changes in order: the last one recorded or being recorded. */
  const queues = new Map<string, Promise<void>>();

  function inOrder(deviceId: string, change: () => Promise<void>): Promise<void> {
    const next = (queues.get(deviceId) ?? Promise.resolve()).then(change);
    const settled = next.catch(() => {});
    queues.set(deviceId, settled);
    void settled.then(() => {
      if (queues.get(deviceId) === settled) queues.delete(deviceId);
    });
    return next;
  }

  return {
    online(deviceId: string, agentVersion: string | null, at: number, forwardAllow: readonly string[] | null): Promise<void> {
      const iso = new Date(at).toISOString();
      return inOrder(deviceId, async () => {
        const generation = await store.devices.connect(deviceId, { node: node.run, url: node.url, agentVersion, forwardAllow, at: iso });
        if (generation === undefined) return;
        generations.set(deviceId, generation);
        events.publish({ event: 'agent.online', data: { device_id: deviceId, at: iso } });
      });
    },
    offline(deviceId: string, at: number): Promise<void> {
      const iso = new Date(at).toISOString();
      return inOrder(deviceId, async () => {
        const generation = generations.get(deviceId);
        generations.delete(deviceId);
        if (generation === undefined) return;
        if (await store.devices.disconnect(deviceId, generation, iso)) events.publish({ event: 'agent.offline', data: { device_id: deviceId, at: iso } });
      });
    },
    /** Many changes at once, in one transaction (a cluster's control node batches them; it keeps its edges' generations). */
    async apply(changes: readonly PresenceChange[]): Promise<void> {
      await store.devices.applyPresence(changes);
      for (const c of changes) events.publish({ event: c.kind === 'online' ? 'agent.online' : 'agent.offline', data: { device_id: c.deviceId, at: c.at } });
    },
    /** The devices recorded online. */
    onlineIds: (): Promise<string[]> => store.devices.onlineIds(),
    seen: (lastSeen: Map<string, number>): Promise<void> => store.devices.markSeen(new Map([...lastSeen].map(([id, at]) => [id, new Date(at).toISOString()]))),
  };
}
export type Presence = ReturnType<typeof createPresence>;
