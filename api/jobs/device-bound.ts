/**
 * @module How many job messages of one device the dispatcher records at once (docs/jobs.md): an
 * agent sends its `jobs.running` and at most one result per attempt it holds, so more than that
 * pending at once is a flood, and what comes past the bound is dropped rather than queued without
 * end (a result dropped is sent again after the agent's next reconnect). A flood is logged once.
 */
import type { Logger } from '../../shared/log';

export function createDeviceBound(max: number, log: Logger) {
  const pending = new Map<string, number>();
  /** Devices whose flood was logged (once, until their pending messages are recorded). */
  const flooding = new Set<string>();
  return {
    /** Whether one more message of the device may be recorded now (then `done` once it is). */
    take(deviceId: string): boolean {
      const n = pending.get(deviceId) ?? 0;
      if (n < max) {
        pending.set(deviceId, n + 1);
        return true;
      }
      if (!flooding.has(deviceId)) log.warn('an agent floods its job messages; dropping them until those pending are recorded', { device_id: deviceId });
      flooding.add(deviceId);
      return false;
    },
    done(deviceId: string): void {
      const left = (pending.get(deviceId) ?? 1) - 1;
      if (left > 0) {
        pending.set(deviceId, left);
        return;
      }
      pending.delete(deviceId);
      flooding.delete(deviceId);
    },
  };
}
