/**
 * @module The runtime's reports (replicas ready for a rollout, in all and per revision, and why it
 * failed when it did), recorded on their service's row. A runtime hands them over from its timers
 * and events and does not wait: they are queued per service and recorded one at a time, in the
 * order it sent them, each in place of the row as it read it, so neither a report of a stale
 * rollout nor one racing an operator's change (or another peer's report) can undo what came
 * after it. A report that cannot be recorded is logged, never thrown.
 */
import type { Logger } from '../../shared/log';
import { MAX_ATTEMPTS, type ServiceRecords } from './records';
import type { RuntimeReport } from './runtime';
import { deriveStatus, statusMessage, syncStatus } from './status';

export function createReports(records: ServiceRecords, log: Logger) {
  const { repo, readiness } = records;
  /** Per service, the last report queued: the next one is recorded after it. */
  const queues = new Map<string, Promise<void>>();

  /** Records one report on the service as it is now; a report of another rollout than the one under way is ignored. */
  async function record(report: RuntimeReport): Promise<void> {
    const where = { service: report.service, environment: report.environment };
    for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      const row = await repo.get(report.service, report.environment);
      if (!row || row.rollout !== report.rollout) return;
      const status = deriveStatus(row.status, row.desired_replicas, report);
      const message = statusMessage(status, report, row.desired_replicas, row.status_message);
      if (await repo.progress(row, { ready: report.ready, status, sync: syncStatus(row.desired_replicas, report.ready), message })) {
        readiness.record(report);
        // Not the message: the container's log lines in it are the service's, and may hold anything.
        if (status !== row.status) log.info('service status changed', { ...where, status });
        return;
      }
    }
    log.warn('a runtime report was not recorded: its service kept changing while it was', { ...where, rollout: report.rollout });
  }

  return {
    /**
     * Takes a runtime report: recorded after the service's earlier ones. Resolves once it is
     * recorded (or ignored as stale); never rejects: a failure is logged.
     */
    onReport(report: RuntimeReport): Promise<void> {
      const key = `${report.environment}/${report.service}`;
      const recorded = (queues.get(key) ?? Promise.resolve()).then(() => record(report));
      const done = recorded.catch((err: unknown) =>
        log.error('a runtime report was not recorded', {
          service: report.service,
          environment: report.environment,
          err: err instanceof Error ? err.message : String(err),
        }),
      );
      queues.set(key, done);
      void done.then(() => {
        if (queues.get(key) === done) queues.delete(key);
      });
      return done;
    },

    /** Resolves once every report taken so far (and any taken meanwhile) is recorded: before the database closes. */
    async idle(): Promise<void> {
      while (queues.size > 0) await Promise.all(queues.values());
    },
  };
}
