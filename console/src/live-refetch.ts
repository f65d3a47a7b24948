/**
 * @module Following what a page shows (jobs, access requests): the events it cares about, from
 * the console's one event stream (./events.ts), trigger a refetch, at most once a second and
 * never two at a time, so a burst of events does not turn into a burst of requests. A slow poll
 * backs the stream up: events sent while it reconnects are lost, a refetch is not (and some
 * changes have no event, as a grant that ends by its time).
 */
import { onLive, type LiveEvent } from './events';
import type { Cleanup } from './page';

/** At most one refetch a second. */
const MIN_GAP_MS = 1000;
/** The backup poll: slow, the stream does the real work. */
const POLL_MS = 30_000;

export interface Follow {
  /** Asks for a refetch: now when the last one is a second old, else once it is. */
  poke(): void;
  stop: Cleanup;
}

export interface FollowOptions {
  /** Whether an event concerns the page (after which `seen` may show what it says at once). */
  matches(e: LiveEvent): boolean;
  seen?(e: LiveEvent): void;
  refetch(): Promise<void>;
  /** Whether the backup poll is still needed (default: always). */
  active?(): boolean;
}

export function followEvents(options: FollowOptions): Follow {
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
    timer = setTimeout(
      () => {
        timer = undefined;
        void run();
      },
      Math.max(0, last + MIN_GAP_MS - Date.now()),
    );
  }

  const unsubscribe = onLive((e) => {
    if (!options.matches(e)) return;
    options.seen?.(e);
    poke();
  });
  const poll = setInterval(() => {
    if (options.active?.() ?? true) poke();
  }, POLL_MS);
  // What changed between the page's first read and this subscription came by no event it heard
  // (a job that ended at once): read once more now.
  poke();

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
