/**
 * @module The dispatcher (docs/jobs.md): runs jobs' executions on the agents connected to this
 * node and records their results. An agent is ready once it said which attempts it still runs
 * (`jobs.running`; an attempt it does not name ended with its restart). One loop, on one timer,
 * starts executions at each job's pace (./runtime-starts), applies the jobs' rules and publishes
 * their events (./runtime-settle) and sweeps what is late (./runtime-sweeps); it is woken when a
 * job is created, an agent becomes ready or an execution ends. Nothing it keeps in memory is needed
 * to go on after a restart: the database holds every execution's state.
 */
import type { Logger } from '../../shared/log';
import type { Metrics } from '../../shared/metrics';
import type { RelayToAgentMessage } from '../../shared/protocol/control-channel';
import { MAX_RUNNING_JOBS, type JobResultMessage, type JobsRunningMessage } from '../../shared/protocol/jobs';
import { JOB_LIMITS } from '../../shared/api/jobs';
import type { EventHub } from '../events/hub';
import type { Store } from '../store/index';
import { createJobRunRepo } from '../store/job-runs';
import { createJobSweepRepo } from '../store/job-runs-sweeps';
import { createDeviceBound } from './device-bound';
import { createSettler } from './runtime-settle';
import { startExecutions } from './runtime-starts';
import { createSweeper } from './runtime-sweeps';
import { createResultWriter } from './result-writer';
import { attemptEnd } from './runtime-work';

/** The least time between two rounds (ms): a burst of results is acted on in one round. */
const MIN_GAP_MS = 20;
/** Job messages of one device recorded at once at most (./device-bound): its report and a result per attempt it holds, each maybe twice. */
const MAX_PENDING_PER_DEVICE = 2 * MAX_RUNNING_JOBS + 2;
/**
 * How long a job that found nothing queued on the agents here is left alone while no other agent
 * becomes ready (ms): it is not scanned every round (a job over thousands of offline devices would
 * be read whole five times a second), yet an execution a peer gave back is found within this.
 */
const EXHAUSTED_RECHECK_MS = 5000;

export interface DispatcherDeps {
  store: Store;
  log: Logger;
  metrics: Metrics;
  now: () => number;
  /** This node's run id (kept on each attempt it starts). */
  node: string;
  events: EventHub;
  /** Whether this node sweeps (one peer at a time does; SQLite: always). */
  leads(): boolean;
  /** Sends a job message to the agent connection `generation` of a device, if it is still connected here. */
  send(deviceId: string, generation: number, msg: RelayToAgentMessage): boolean;
  /** The loop's period (ms); default 200. */
  tickMs?: number;
  /** How often the sweeps run (ms); default 1000. */
  sweepMs?: number;
  /** The least time between two `job.updated` of one running job (ms); default 500. */
  eventGapMs?: number;
  /** Added to an attempt's own timeout for its deadline (s); default JOB_LIMITS.deadlineMarginSeconds. */
  deadlineMarginSeconds?: number;
}

export function createDispatcher(deps: DispatcherDeps) {
  const { store, log, now } = deps;
  const tickMs = deps.tickMs ?? 200;
  const sweepMs = deps.sweepMs ?? 1000;
  const runs = createJobRunRepo(store.db, store.dialect);
  // Results arriving together are written in one transaction (10,000 agents answering at once: a few commits, not 10,000).
  const results = createResultWriter(store.db, store.dialect);
  const sweeps = createJobSweepRepo(store.db);
  /** The agents here that reported `jobs.running`: device → connection generation. */
  const ready = new Map<string, number>();
  /** Agents whose `jobs.running` is being acted on: device → generation. */
  const reporting = new Map<string, number>();
  /**
   * How many attempts each ready agent holds (runs, or keeps the result of until acknowledged), as
   * far as this node knows; one holding MAX_RUNNING_JOBS gets no more until one is acknowledged.
   */
  const holding = new Map<string, number>();
  const held = (deviceId: string, by: number) => {
    const before = holding.get(deviceId) ?? 0;
    holding.set(deviceId, Math.max(0, before + by));
    if (before >= MAX_RUNNING_JOBS && before + by < MAX_RUNNING_JOBS) takersChanged++;
  };
  /** Bumped whenever an agent here may take attempts it could not before (it became ready, or took one off its full hands). */
  let takersChanged = 0;
  /** Jobs that took every queued execution of the agents here: at which `takersChanged`, and when. */
  const exhausted = new Map<string, { version: number; at: number }>();
  /** The ready agents that may take another attempt. */
  const takers = (): ReadonlyMap<string, number> => {
    const full = [...holding].filter(([, n]) => n >= MAX_RUNNING_JOBS);
    if (full.length === 0) return ready;
    const open = new Map(ready);
    for (const [deviceId] of full) open.delete(deviceId);
    return open;
  };
  const started = deps.metrics.counter('tether_job_executions_started_total', 'Job executions started on agents connected to this node.');
  const ended = deps.metrics.counter(
    'tether_job_executions_ended_total',
    'Job executions ended by this node, by status and reason (reported: the agent’s result; else the server’s error code).',
  );
  deps.metrics.gauge('tether_job_executions_in_progress', 'Job executions running on agents this node started them on.', () => runs.inFlightOn(deps.node));

  let publishing = false;
  const settler = createSettler({
    store,
    log,
    now,
    gapMs: deps.eventGapMs ?? 500,
    publish(e) {
      publishing = true;
      try {
        deps.events.publish(e);
      } finally {
        publishing = false;
      }
    },
  });
  const sweep = createSweeper({
    store,
    ended,
    changed: (jobId) => settler.changed(jobId),
    review: (jobIds) => settler.review(jobIds),
    cancel(deviceId, msg) {
      const generation = ready.get(deviceId);
      if (generation !== undefined && deps.send(deviceId, generation, msg)) held(deviceId, -1);
    },
  });
  // A job created (or changed) here or on a peer: its executions may start now.
  const unsubscribe = deps.events.subscribe((e) => {
    if (!publishing && e.event === 'job.updated' && e.data.status === 'in_progress') wake();
  });

  let timer: NodeJS.Timeout | undefined;
  let timerAt = Infinity;
  let running: Promise<void> | undefined;
  let again = false;
  let closed = false;
  let lastSweep = -Infinity;
  let lastRoundEnd = -Infinity;
  /** Job messages being recorded (at most MAX_PENDING_PER_DEVICE of each device). */
  const handling = new Set<Promise<void>>();
  const bound = createDeviceBound(MAX_PENDING_PER_DEVICE, log);

  /** Runs a round at `at` (ms) at the latest (but not sooner than MIN_GAP_MS after the last: results come in bursts). */
  function wakeAt(wanted: number): void {
    const at = Math.max(wanted, lastRoundEnd + MIN_GAP_MS);
    if (closed || (timer !== undefined && timerAt <= at)) return;
    clearTimeout(timer);
    timerAt = at;
    timer = setTimeout(fire, Math.max(0, at - now()));
    timer.unref();
  }
  function wake(): void {
    wakeAt(now());
  }
  function fire(): void {
    timer = undefined;
    timerAt = Infinity;
    if (running) {
      again = true;
      return;
    }
    running = round()
      .catch((err: Error) => log.warn('job dispatch round failed; trying again', { err: err.message }))
      .finally(() => {
        running = undefined;
        lastRoundEnd = now();
        wakeAt(now() + (again ? 0 : tickMs));
        again = false;
      });
  }

  async function round(): Promise<void> {
    const t = now();
    if (deps.leads() && t - lastSweep >= sweepMs) {
      lastSweep = t;
      await sweep(t);
    }
    await settler.round();
    if (ready.size === 0) return;
    const jobs = await runs.startable();
    const running = new Set(jobs.map((j) => j.job_id));
    for (const jobId of exhausted.keys()) if (!running.has(jobId)) exhausted.delete(jobId);
    for (const job of jobs) {
      const open = takers();
      if (open.size === 0) return;
      if (closed) return;
      const seen = exhausted.get(job.job_id);
      if (seen && seen.version === takersChanged && t - seen.at < EXHAUSTED_RECHECK_MS) continue;
      const version = takersChanged;
      const r = await startExecutions(
        {
          store,
          log,
          now,
          node: deps.node,
          tickMs,
          deadlineMarginSeconds: deps.deadlineMarginSeconds ?? JOB_LIMITS.deadlineMarginSeconds,
          send: (deviceId, msg) => {
            const generation = ready.get(deviceId);
            return generation !== undefined && deps.send(deviceId, generation, msg);
          },
        },
        job,
        open,
      );
      const { started: attempts, nextAt } = r;
      if (r.exhausted) exhausted.set(job.job_id, { version, at: t });
      else exhausted.delete(job.job_id);
      for (const a of attempts) held(a.device_id, 1);
      if (attempts.length > 0) {
        started.inc({}, attempts.length);
        settler.changed(job.job_id);
      }
      if (nextAt !== undefined) wakeAt(nextAt);
    }
  }

  /** `jobs.running`: attempts of this device the server believes running that the agent does not name ended with its restart. */
  async function onRunning(deviceId: string, generation: number, msg: JobsRunningMessage): Promise<void> {
    reporting.set(deviceId, generation);
    holding.set(deviceId, msg.running.length);
    const named = new Set(msg.running.map((r) => `${r.execution_id}#${r.attempt}`));
    const at = new Date(now()).toISOString();
    for (const a of await runs.runningOn(deviceId)) {
      if (named.has(`${a.execution_id}#${a.attempt}`)) continue;
      if (await sweeps.fail(a, 'agent_restarted', 'the agent restarted while it ran: its result is lost', at)) {
        log.info('a job execution ended with its agent’s restart', { device_id: deviceId, execution_id: a.execution_id, attempt: a.attempt });
        ended.inc({ status: 'failed', reason: 'agent_restarted' });
        settler.changed(a.job_id);
      }
    }
    // Ready only if this connection is still the one that reported (it did not close meanwhile).
    if (reporting.get(deviceId) !== generation) return;
    reporting.delete(deviceId);
    ready.set(deviceId, generation);
    takersChanged++;
    wake();
  }

  /** `job.result`: recorded once (a resent or late one changes nothing), acknowledged always, so the agent forgets it. */
  async function onResult(deviceId: string, generation: number, msg: JobResultMessage): Promise<void> {
    const jobId = await results.record(msg.execution_id, msg.attempt, deviceId, attemptEnd(msg, new Date(now()).toISOString()));
    if (jobId !== undefined) {
      ended.inc({ status: msg.status, reason: 'reported' });
      settler.changed(jobId);
      wake();
    } else {
      log.debug('a job result came for an attempt that is not running (a resent or late one); acknowledged', {
        device_id: deviceId,
        execution_id: msg.execution_id,
        attempt: msg.attempt,
      });
    }
    if (
      deps.send(deviceId, generation, { type: 'job.ack', execution_id: msg.execution_id, attempt: msg.attempt }) &&
      (ready.get(deviceId) ?? reporting.get(deviceId)) === generation
    ) {
      held(deviceId, -1);
    }
  }

  return {
    /** A job message of an agent connected here (the relay hands them over). Never throws. */
    message(deviceId: string, generation: number, msg: JobsRunningMessage | JobResultMessage): void {
      if (closed) return; // the agent reports again when it reconnects
      if (!bound.take(deviceId)) return;
      const handled = (msg.type === 'jobs.running' ? onRunning(deviceId, generation, msg) : onResult(deviceId, generation, msg))
        .catch((err: Error) => log.warn('a job message could not be recorded', { device_id: deviceId, type: msg.type, err: err.message }))
        .finally(() => {
          handling.delete(handled);
          bound.done(deviceId);
        });
      handling.add(handled);
    },
    /** An agent connection here closed: its device gets no more starts through it. */
    gone(deviceId: string, generation: number): void {
      if ((ready.get(deviceId) ?? reporting.get(deviceId)) === generation) holding.delete(deviceId);
      if (ready.get(deviceId) === generation) ready.delete(deviceId);
      if (reporting.get(deviceId) === generation) reporting.delete(deviceId);
    },
    /** Something changed that may let executions start (tests, routes). */
    wake,
    /** Starts the loop (queued executions from before a restart start as their agents become ready). */
    start(): void {
      wake();
    },
    /** Stops the loop and waits for its round and the messages being recorded. */
    async close(): Promise<void> {
      closed = true;
      clearTimeout(timer);
      timer = undefined;
      unsubscribe();
      await running;
      await Promise.all(handling);
    },
  };
}
export type Dispatcher = ReturnType<typeof createDispatcher>;
