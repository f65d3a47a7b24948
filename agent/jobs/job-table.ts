/**
 * @module The agent's job attempts (shared/protocol/jobs.ts; docs/jobs.md, on the device): those
 * it runs and those whose result waits for the relay's `job.ack`. A result is sent when reached
 * and again after every reconnect, right after the `jobs.running` report that names it, until
 * acknowledged, so a result reached while the connection was down is not lost; a `job.run` of an
 * attempt it already runs or holds is not run again (never twice). At most MAX_RUNNING_JOBS
 * attempts are held; one more is answered `agent_busy` at once. Holds nothing heavy itself: each
 * kind is loaded with its first job (./run-work).
 */
import type { Logger } from '../../shared/log';
import type { AgentToRelayMessage, RelayToAgentMessage } from '../../shared/protocol/control-channel';
import { MAX_JOB_RESULT_BYTES, MAX_RUNNING_JOBS, type JobResultMessage, type JobRunMessage } from '../../shared/protocol/jobs';
import type { JobContext, JobOutcome } from './outcome';

/** The job messages of the relay the table follows. */
export type JobMessage = Extract<RelayToAgentMessage, { type: 'job.run' | 'job.ack' | 'job.cancel' }>;

export interface JobTableDeps {
  log: Logger;
  /** Sends to the relay when connected (dropped otherwise: the table sends again after the reconnect). */
  send(msg: AgentToRelayMessage): void;
  /** Runs one attempt's work; never rejects. */
  run(work: JobRunMessage['work'], ctx: Pick<JobContext, 'signal' | 'log'>): Promise<JobOutcome>;
  /** How many attempts are held at most (MAX_RUNNING_JOBS; tests lower it). */
  maxHeld?: number;
  /** How long stop() waits for the running attempts to end (their commands killed). */
  stopWaitMs?: number;
}

interface Attempt {
  execution_id: string;
  attempt: number;
  /** While it runs: aborts it. */
  controller?: AbortController;
  running?: Promise<void>;
  /** Once it ended: its result, until acknowledged. */
  result?: JobResultMessage;
}

/**
 * `result` if it fits a control frame (MAX_JOB_RESULT_BYTES), else a failure saying so: a frame
 * too big makes the relay close the connection, and the result, sent again after each reconnect,
 * would keep the agent from ever staying connected. What is small of it is kept (the exit code
 * and the output tail are bounded; a diagnostics result is not).
 */
export function fitted(result: JobResultMessage): JobResultMessage {
  const size = Buffer.byteLength(JSON.stringify(result));
  if (size <= MAX_JOB_RESULT_BYTES) return result;
  const { type, execution_id, attempt, exit_code } = result;
  const message = `the result is ${size} bytes as JSON; a job result carries at most ${MAX_JOB_RESULT_BYTES} bytes (ask for less, e.g. fewer log.tail lines)`;
  return { type, execution_id, attempt, status: 'failed', ...(exit_code === undefined ? {} : { exit_code }), error: { code: 'result_too_large', message } };
}

/** Acknowledged attempts remembered, so a late duplicate `job.run` of one does not run it again. */
const REMEMBER_DONE = 256;

export function createJobTable(deps: JobTableDeps) {
  const { log } = deps;
  const maxHeld = deps.maxHeld ?? MAX_RUNNING_JOBS;
  const held = new Map<string, Attempt>();
  const done = new Set<string>();
  let stopped = false;

  const keyOf = (m: { execution_id: string; attempt: number }) => `${m.execution_id}\n${m.attempt}`;

  function remember(key: string): void {
    done.add(key);
    if (done.size > REMEMBER_DONE) done.delete(done.values().next().value!);
  }

  function start(msg: JobRunMessage): void {
    const key = keyOf(msg);
    const known = held.get(key);
    if (known) {
      if (known.result) deps.send(known.result); // the relay asks again: it did not get it
      return;
    }
    if (done.has(key)) return;
    const alog = log.child({ execution_id: msg.execution_id, attempt: msg.attempt, kind: msg.work.kind });
    if (held.size >= maxHeld) {
      alog.warn('refusing a job attempt: too many held', { held: held.size });
      const message = `this device runs or holds the results of ${maxHeld} job attempts already`;
      deps.send({ type: 'job.result', execution_id: msg.execution_id, attempt: msg.attempt, status: 'failed', error: { code: 'agent_busy', message } });
      return;
    }
    const controller = new AbortController();
    const entry: Attempt = { execution_id: msg.execution_id, attempt: msg.attempt, controller };
    held.set(key, entry);
    alog.info('job attempt started');
    entry.running = deps.run(msg.work, { signal: controller.signal, log: alog }).then(function attemptEnded(outcome) {
      entry.running = undefined;
      // Canceled, or the agent stopped: no result is expected.
      if (controller.signal.aborted || held.get(key) !== entry) return;
      entry.controller = undefined;
      entry.result = fitted({ type: 'job.result', execution_id: msg.execution_id, attempt: msg.attempt, ...outcome });
      alog.info('job attempt ended', { status: entry.result.status, code: entry.result.error?.code });
      deps.send(entry.result);
    });
  }

  function cancel(key: string): void {
    const entry = held.get(key);
    if (!entry) return;
    held.delete(key);
    remember(key);
    if (entry.controller) {
      log.info('job attempt canceled', { execution_id: entry.execution_id, attempt: entry.attempt });
      entry.controller.abort();
    }
  }

  return {
    /** Follows a job message of the relay. */
    onMessage(msg: JobMessage): void {
      if (stopped) return;
      switch (msg.type) {
        case 'job.run':
          return start(msg);
        case 'job.ack': {
          const key = keyOf(msg);
          // A running attempt has no result to forget (a confused relay's ack changes nothing).
          if (held.get(key)?.result) {
            held.delete(key);
            remember(key);
          }
          return;
        }
        case 'job.cancel':
          return cancel(keyOf(msg));
      }
    },

    /** After the relay's welcome: reports what runs or waits, then sends every waiting result again. */
    connected(): void {
      if (stopped) return;
      const running = [...held.values()].map((a) => ({ execution_id: a.execution_id, attempt: a.attempt }));
      deps.send({ type: 'jobs.running', running });
      for (const a of held.values()) if (a.result) deps.send(a.result);
    },

    /** Takes jobs again after stop() (an agent started again). */
    start(): void {
      stopped = false;
    },

    /** Stops every running attempt (commands killed) and forgets every result; takes no more. */
    async stop(): Promise<void> {
      stopped = true;
      const running = [...held.values()].flatMap((a) => (a.running ? [a.running] : []));
      for (const a of held.values()) a.controller?.abort();
      held.clear();
      let timer: NodeJS.Timeout | undefined;
      const cap = new Promise<void>((resolve) => (timer = setTimeout(resolve, deps.stopWaitMs ?? 5000)));
      await Promise.race([Promise.allSettled(running), cap]);
      clearTimeout(timer);
    },

    /** Attempts running or holding a result. */
    get size(): number {
      return held.size;
    },
  };
}
export type JobTable = ReturnType<typeof createJobTable>;
