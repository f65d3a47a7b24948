/**
 * @module Following a job until it is over, as `kubectl rollout status` follows a rollout: a
 * progress line on stderr (redrawn in place on a terminal every second, else a line per change),
 * kept current by the `job.updated` events of `GET /v1/events` when the token may read them,
 * and by reading the job (`GET /v1/jobs/{id}`) every second when it may not (every 5 s besides
 * the events, in case one was missed). Ctrl-C stops following, not the job.
 */
import type { Job } from '../../shared/api/jobs';
import { readOrPassingFailure } from '../api-client';
import type { Context } from '../context';
import { CliError } from '../errors';
import type { ServerEvent } from '../../shared/api/events';
import { followEvents } from '../event-stream';
import { isOver, progressLine } from './job-report';

const POLL_MS = 1000;
const POLL_WITH_EVENTS_MS = 5000;
const REDRAW_MS = 1000;
/** How long the server may be unreachable (a restart) before following gives up. */
const OUTAGE_MS = 120_000;

/** What a `job.updated` event says (read as sent, not checked: one that is not is corrected by the next read of the job). */
type JobUpdate = Extract<ServerEvent, { event: 'job.updated' }>['data'];

export interface Followed {
  job: Job;
  /** Ctrl-C stopped the following (the job goes on). */
  interrupted: boolean;
  seconds: number;
}

/** Follows job `created` until it is over or Ctrl-C; the progress line goes to stderr. */
export async function followJob(ctx: Context, created: Job, tty: boolean): Promise<Followed> {
  const started = performance.now();
  const seconds = () => (performance.now() - started) / 1000;
  let job = created;
  /** `job` is as last read from the server, not as an event said since. */
  let confirmed = true;
  let wake = () => {};
  let interrupted = false;
  let interrupt = () => {};
  const interruption = new Promise<void>((resolve) => (interrupt = resolve));
  const onSigint = () => {
    interrupted = true;
    interrupt();
    wake();
  };
  let lastPoll = -Infinity;
  const onUpdate = (u: JobUpdate) => {
    job = { ...job, status: u.status, counts: { ...job.counts, ...u.counts } };
    confirmed = false;
    wake();
  };
  // What changed before the stream opened is read once it is open.
  const onOpen = () => {
    lastPoll = -Infinity;
    wake();
  };
  const events = followEvents(
    ctx,
    (name, data) => name === 'job.updated' && (data as JobUpdate).job_id === created.job_id && onUpdate(data as JobUpdate),
    onOpen,
  );
  let failingSince: number | undefined;
  let printed = '';
  const draw = () => {
    const line = progressLine(job, seconds());
    if (tty) return ctx.out.stderr(`\r${line}\x1b[K`);
    const key = `${job.status} ${JSON.stringify(job.counts)}`;
    if (key !== printed) ctx.out.stderr(`${line}\n`);
    printed = key;
  };

  process.on('SIGINT', onSigint);
  events.ensure();
  try {
    while (!interrupted) {
      const every = events.open ? POLL_WITH_EVENTS_MS : POLL_MS;
      // An event that says the job is over is checked against the job itself.
      if (performance.now() - lastPoll >= every || isOver(job)) {
        const read = await Promise.race([readOrPassingFailure<Job>(ctx.api(), `/v1/jobs/${encodeURIComponent(job.job_id)}`), interruption]);
        if (interrupted || !read) break;
        if (read instanceof CliError) {
          if (failingSince === undefined) ctx.notice(`${tty ? '\n' : ''}lost the server (${read.message}); trying again every second`);
          failingSince ??= performance.now();
          if (performance.now() - failingSince > OUTAGE_MS) throw read;
        } else {
          job = read;
          confirmed = true;
          failingSince = undefined;
          events.ensure();
        }
        lastPoll = performance.now();
      }
      draw();
      if (isOver(job) && confirmed) break;
      const next = Math.max(0, lastPoll + (events.open ? POLL_WITH_EVENTS_MS : POLL_MS) - performance.now());
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, tty ? Math.min(next, REDRAW_MS) : next);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  } finally {
    process.off('SIGINT', onSigint);
    events.stop();
    if (tty) ctx.out.stderr('\n');
  }
  return { job, interrupted, seconds: seconds() };
}
