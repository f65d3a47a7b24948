/**
 * @module Following access requests while a page shows them: `access_request.*` events from the
 * console's one event stream (../../events.ts) trigger a refetch, at most once a second and never
 * two at a time. A slow poll backs the stream up (events sent while it reconnects are lost), and
 * catches what has no event: a grant that ends by its time.
 */
import type { LiveEvent } from '../../events';
import { onLive } from '../../events';
import type { Cleanup } from '../../page';

/** At most one refetch a second. */
const MIN_GAP_MS = 1000;
/** The backup poll: slow, the stream does the real work. */
const POLL_MS = 30_000;

export type AccessEventData = Extract<LiveEvent, { event: `access_request.${string}` }>['data'];

export interface Follow {
  /** Asks for a refetch: now when the last one is a second old, else once it is. */
  poke(): void;
  stop: Cleanup;
}

/** Calls `refetch` for each access event that `wanted` accepts (all of them without it), throttled. */
export function followAccess(refetch: () => Promise<void>, wanted: (e: AccessEventData) => boolean = () => true): Follow {
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
      await refetch();
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
    if (!e.event.startsWith('access_request.') || !wanted((e as Extract<LiveEvent, { data: AccessEventData }>).data)) return;
    poke();
  });
  const poll = setInterval(poke, POLL_MS);

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
