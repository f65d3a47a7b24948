/**
 * @module Following jobs while a page shows them: `job.updated` events from the console's one
 * event stream (../../events.ts) trigger a refetch, at most once a second and never two at a
 * time, so a job of thousands of devices does not turn each of its events into requests. A slow
 * poll backs the stream up: events sent while it reconnects are lost, a refetch is not.
 */
import type { LiveEvent } from '../../events';
import { onLive } from '../../events';
import type { Cleanup } from '../../page';

/** At most one refetch a second (the limit for the console). */
const MIN_GAP_MS = 1000;
/** The backup poll while something may still change: slow, the stream does the real work. */
const POLL_MS = 30_000;

type JobUpdated = Extract<LiveEvent, { event: 'job.updated' }>;

export interface Follow {
  /** Asks for a refetch: now when the last one is a second old, else once it is. */
  poke(): void;
  stop: Cleanup;
}

/**
 * Calls `refetch` for each `job.updated` that `wanted` accepts (after `seen`, which may show what
 * the event says at once), throttled; `active()` says whether the backup poll is still needed.
 */
export function followJobs(options: {
  wanted: (e: JobUpdated['data']) => boolean;
  seen?: (e: JobUpdated['data']) => void;
  refetch: () => Promise<void>;
  active: () => boolean;
}): Follow {
  let stopped = false;
  let running = false;
  let again = false;
  let last = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;

  async function run(): Promise<void> {
    if (stopped) return;
    if (running) {
      // One at a time: what changed meanwhile is fetched once this one is done.
      again = true;
      return;
    }
    running = true;
    last = Date.now();
    try {
      await options.refetch();
    } finally {
      running = false;
      if (again && !stopped) {
        again = false;
        poke();
      }
    }
  }

  function poke(): void {
    if (stopped || timer) return;
    const wait = Math.max(0, last + MIN_GAP_MS - Date.now());
    timer = setTimeout(() => {
      timer = undefined;
      void run();
    }, wait);
  }

  const unsubscribe = onLive((e) => {
    if (e.event !== 'job.updated' || !options.wanted(e.data)) return;
    options.seen?.(e.data);
    poke();
  });
  const poll = setInterval(() => {
    if (options.active()) poke();
  }, POLL_MS);

  return {
    poke,
    stop() {
      stopped = true;
      unsubscribe();
      clearInterval(poll);
      clearTimeout(timer);
    },
  };
}
