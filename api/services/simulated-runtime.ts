/**
 * @module The `simulated` runtime, the embedded default: a stand-in for a cluster that makes one
 * replica ready every `replicaMs` and runs nothing. It says so in its logs and in every service
 * record (`runtime: "simulated"`).
 */
import type { Logger } from '../../shared/log';
import type { DeploymentRuntime, RuntimeReport, RolloutTarget } from './runtime';

export function simulatedRuntime(replicaMs: number) {
  return (report: (r: RuntimeReport) => void, log: Logger): DeploymentRuntime => {
    const rollouts = new Map<string, NodeJS.Timeout>();
    const key = (service: string, env: string) => `${env}/${service}`;
    log.info('deployment runtime is simulated: no workloads run; one replica becomes ready every interval', {
      runtime: 'simulated',
      replica_ms: replicaMs,
    });

    function stop(k: string): void {
      clearTimeout(rollouts.get(k));
      rollouts.delete(k);
    }

    return {
      nameOf: () => 'simulated',
      apply(t: RolloutTarget) {
        const k = key(t.service, t.environment);
        stop(k);
        let ready = Math.min(t.ready, t.replicas);
        const step = () => {
          rollouts.delete(k);
          if (ready < t.replicas) ready++;
          report({ service: t.service, environment: t.environment, rollout: t.rollout, ready, state: 'progressing' });
          if (ready < t.replicas) rollouts.set(k, setTimeout(step, replicaMs));
        };
        // Reports come asynchronously, after the API has answered.
        rollouts.set(k, setTimeout(step, ready >= t.replicas ? 0 : replicaMs));
      },
      setCanaryWeight(service, environment, weight) {
        log.debug('simulated canary weight', { service, environment, weight });
      },
      remove(service, environment) {
        stop(key(service, environment));
      },
      close() {
        for (const k of [...rollouts.keys()]) stop(k);
      },
    };
  };
}
