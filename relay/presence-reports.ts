/**
 * @module The relay's reports of its agents (./agents, `PresenceSink`), which the sink may write
 * later: a device's reports are made in the order they happened, each once the one before it is
 * done (online, then offline, never the other way round in the database), and a failed one is
 * logged, never thrown. A sink that answers at once is called at once.
 */
import type { Logger } from '../shared/log';

type Report = () => void | Promise<void>;

export function createPresenceReports(log: Logger) {
  /** The last report of each device still being written. */
  const pending = new Map<string, Promise<void>>();
  /** Heartbeat reports being written. */
  const seenWrites = new Set<Promise<void>>();

  const failed = (what: string, deviceId?: string) => (err: unknown) =>
    log.error(`could not record ${what}`, { ...(deviceId !== undefined && { device_id: deviceId }), err: (err as Error).message });

  /** Runs `report` now, or once `after` is done; a promise of it (never rejecting), or undefined when it was done at once. */
  function run(report: Report, onError: (err: unknown) => void, after?: Promise<void>): Promise<void> | undefined {
    if (after) return after.then(report).catch(onError);
    try {
      const done = report();
      return done ? done.catch(onError) : undefined;
    } catch (err) {
      onError(err);
      return undefined;
    }
  }

  return {
    /** Makes a report of the device, after its reports before it. */
    of(deviceId: string, report: Report): void {
      const done = run(report, failed('agent presence', deviceId), pending.get(deviceId));
      if (!done) return;
      pending.set(deviceId, done);
      void done.then(() => {
        if (pending.get(deviceId) === done) pending.delete(deviceId);
      });
    },
    /** Makes a report of heartbeats (their order does not matter: the next ones come soon). */
    seen(report: Report): void {
      const done = run(report, failed('agent heartbeats'));
      if (!done) return;
      seenWrites.add(done);
      void done.then(() => seenWrites.delete(done));
    },
    /** Resolves once every report made so far is written (or failed). */
    async settled(): Promise<void> {
      await Promise.all([...pending.values(), ...seenWrites]);
    },
  };
}
