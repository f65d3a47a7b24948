/**
 * @module Following jobs while a page shows them: `job.updated` events trigger a refetch, throttled
 * (../../live-refetch.ts), so a job of thousands of devices does not turn each of its events into
 * requests; the backup poll runs only while something may still change.
 */
import type { LiveEvent } from '../../events';
import { followEvents, type Follow } from '../../live-refetch';

export type { Follow } from '../../live-refetch';

type JobUpdated = Extract<LiveEvent, { event: 'job.updated' }>;

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
  const isJob = (e: LiveEvent): e is JobUpdated => e.event === 'job.updated';
  return followEvents({
    matches: (e) => isJob(e) && options.wanted(e.data),
    seen: (e) => {
      if (isJob(e)) options.seen?.(e.data);
    },
    refetch: options.refetch,
    active: options.active,
  });
}
