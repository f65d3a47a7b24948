/**
 * @module Following access requests while a page shows them: `access_request.*` events trigger a
 * refetch, throttled (../../live-refetch.ts); its backup poll also catches what has no event, a
 * grant that ends by its time.
 */
import type { LiveEvent } from '../../events';
import { followEvents, type Follow } from '../../live-refetch';

export type { Follow } from '../../live-refetch';

export type AccessEventData = Extract<LiveEvent, { event: `access_request.${string}` }>['data'];
type AccessEvent = Extract<LiveEvent, { data: AccessEventData }>;

/** Calls `refetch` for each access event that `wanted` accepts (all of them without it), throttled. */
export function followAccess(refetch: () => Promise<void>, wanted: (e: AccessEventData) => boolean = () => true): Follow {
  const isAccess = (e: LiveEvent): e is AccessEvent => e.event.startsWith('access_request.');
  return followEvents({ matches: (e) => isAccess(e) && wanted(e.data), refetch });
}
