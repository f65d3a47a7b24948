/**
 * @module The `docker` runtime in one environment: the instructions per service (apply, canary
 * weight, remove), and a reconcile loop that makes the engine match them. Every instruction
 * starts a pass of its service at once; a tick every few seconds passes over every service,
 * those found only in the engine too (drift: a replica removed or crashed by hand comes back).
 * A service's passes run one at a time (serial-runner.ts); one that leaves work pending is
 * followed soon by another.
 */
import type { RolloutTarget } from '../runtime';
import { applied, weighted } from './desired';
import { engineMessage } from './engine';
import { LABEL, labelFilter } from './labels';
import { listReplicas, tailLogs } from './replicas';
import { createSerialRunner } from './serial-runner';
import { newServiceState, pass, type PassDeps, type ServiceState } from './service-pass';
import type { Instruction } from './state-file';

export interface EnvironmentDeps extends PassDeps {
  /** The tick: every service is looked at this often. */
  reconcileMs: number;
  /** The next pass of a service with work pending (replicas starting, a rollout under way). */
  followUpMs: number;
  instructions: ReadonlyMap<string, Instruction>;
  save(instructions: ReadonlyMap<string, Instruction>): void;
}

export type ReplicaLogs = Array<{ replica: string; revision: string; lines: string[] }>;

export function createEnvironment(deps: EnvironmentDeps) {
  const { environment, engine, log, now } = deps;
  const states = new Map<string, ServiceState>();
  let closed = false;
  let lastError: string | undefined;

  for (const [service, instruction] of deps.instructions) {
    const s = newServiceState(now());
    if ('desired' in instruction) s.desired = instruction.desired;
    else s.removing = true;
    states.set(service, s);
  }

  function stateOf(service: string): ServiceState {
    let s = states.get(service);
    if (!s) states.set(service, (s = newServiceState(now())));
    return s;
  }

  function persist(): void {
    const instructions = new Map<string, Instruction>();
    for (const [service, s] of states) {
      if (s.removing) instructions.set(service, { removed: true });
      else if (s.desired) instructions.set(service, { desired: s.desired });
    }
    try {
      deps.save(instructions);
    } catch (err) {
      log.error('could not keep the runtime instructions: a restart adopts replicas without them', { environment, err: engineMessage(err) });
    }
  }

  /** Logs a failing pass once per distinct error (an engine that is away fails every pass the same way). */
  function passFailed(service: string, err: unknown): void {
    const message = engineMessage(err);
    if (message === lastError) return;
    lastError = message;
    log.warn('reconcile pass failed: retrying', { environment, service, error: message });
  }

  /** One pass of a service; true when it is settled. A service found gone is forgotten. */
  async function passOf(service: string): Promise<boolean> {
    const s = stateOf(service);
    const gen = s.gen;
    const result = await pass(deps, service, s, () => !closed && s.gen === gen);
    lastError = undefined;
    if (result.gone && s.gen === gen && states.get(service) === s) {
      const hadInstructions = s.removing || s.desired !== undefined;
      states.delete(service);
      if (hadInstructions) persist();
      return true;
    }
    return result.settled;
  }

  const runner = createSerialRunner(passOf, deps.followUpMs, passFailed);
  const kick = (service: string) => runner.kick(service);

  /** The services with replicas in the engine (none with instructions only are missed by the caller). */
  async function servicesRunning(): Promise<Set<string>> {
    const listed = await engine.docker.listContainers({ all: true, filters: { label: labelFilter(environment) } });
    return new Set(listed.map((c) => c.Labels[LABEL.service]).filter((name): name is string => !!name));
  }

  async function tick(): Promise<void> {
    if (closed) return;
    let found = new Set<string>();
    try {
      found = await servicesRunning();
      lastError = undefined;
    } catch (err) {
      passFailed('*', err);
    }
    for (const service of new Set([...states.keys(), ...found])) kick(service);
  }

  const ticker = setInterval(() => void tick(), deps.reconcileMs);
  void tick(); // adoption: the first look at what runs

  /** A new instruction: persisted, then carried out by a pass that starts now. */
  function instruct(service: string, change: (s: ServiceState) => void): void {
    const s = stateOf(service);
    change(s);
    s.gen++;
    s.lastReport = undefined;
    persist();
    kick(service);
  }

  return {
    apply(target: RolloutTarget): void {
      instruct(target.service, (s) => {
        s.desired = applied(target, s.removing ? undefined : s.desired);
        s.removing = false;
        s.since = now();
        s.completed = false;
        s.failure = undefined;
        s.pulled = new Set();
        s.pullError = undefined;
      });
    },

    setCanaryWeight(service: string, weight: number): void {
      const s = states.get(service);
      if (!s?.desired?.target.canary) {
        log.warn('canary weight for a service without a canary: ignored', { environment, service, weight });
        return;
      }
      instruct(service, () => (s.desired = weighted(s.desired!, weight)));
    },

    remove(service: string): void {
      instruct(service, (s) => {
        s.removing = true;
        s.desired = undefined;
      });
    },

    async logs(service: string, lines: number): Promise<ReplicaLogs> {
      const replicas = await listReplicas(engine.docker, environment, service);
      return Promise.all(replicas.map(async (r) => ({ replica: r.name, revision: r.revision, lines: await tailLogs(engine.docker, r.id, lines) })));
    },

    close(): void {
      closed = true;
      clearInterval(ticker);
      runner.close();
    },
  };
}
export type DockerEnvironment = ReturnType<typeof createEnvironment>;
