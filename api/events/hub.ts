/**
 * @module Live changes for the console and API users (docs/http-api.md, events): agents coming and
 * going, sessions opening and closing, jobs changing. Published as they happen and handed to each
 * subscriber that may see them: presence to anyone who may read devices, a session's events to its
 * owner and administrators, a job's to its creator and administrators, an access request's to its
 * requester and administrators. Nothing is stored: a subscriber sees what happens while it listens, on this
 * peer or, published after commit over the bus, on any other (docs/peers.md).
 */
import { hasScope } from '../access';
import { hasRole } from '../roles';
import type { Principal } from '../store/tokens';
import type { ServerEvent } from '../../shared/api/events';

/** An event as `GET /v1/events` carries it (its schema: `shared/api/events.ts`). */
export type TetherEvent = ServerEvent;

/** Whether `principal` may see `e`. */
export function maySee(principal: Principal, e: TetherEvent): boolean {
  if (e.event === 'agent.online' || e.event === 'agent.offline') return hasRole(principal.role, 'developer') && hasScope(principal, 'devices:read');
  // A job's changes, as the job itself: to its creator and administrators, with a token that may read jobs.
  if (e.event === 'job.updated') {
    if (!hasRole(principal.role, 'developer') || !hasScope(principal, 'jobs:read')) return false;
    return hasRole(principal.role, 'administrator') || e.data.created_by === principal.username;
  }
  if (!hasRole(principal.role, 'developer') || !hasScope(principal, 'sessions:read')) return false;
  if (hasRole(principal.role, 'administrator')) return true;
  // An access request's changes, as the request itself: to its requester (and administrators).
  if ('requester' in e.data) return e.data.requester === principal.username;
  return 'opened_by' in e.data && e.data.opened_by === principal.username;
}

export function createEventHub() {
  const subscribers = new Set<(e: TetherEvent) => void>();
  let onLocal: ((e: TetherEvent) => void) | undefined;
  return {
    /** An event of this process: to every subscriber, and to the other peers (`forwardLocal`). */
    publish(e: TetherEvent): void {
      for (const listener of subscribers) listener(e);
      onLocal?.(e);
    },
    /** An event another peer published: to every subscriber here, and no further. */
    deliver(e: TetherEvent): void {
      for (const listener of subscribers) listener(e);
    },
    /** Where this process's own events go besides its subscribers (the other peers). */
    forwardLocal(listener: (e: TetherEvent) => void): void {
      onLocal = listener;
    },
    /** Calls `listener` with each event from now on; returns the way to stop. */
    subscribe(listener: (e: TetherEvent) => void): () => void {
      subscribers.add(listener);
      return () => void subscribers.delete(listener);
    },
    get size(): number {
      return subscribers.size;
    },
  };
}
export type EventHub = ReturnType<typeof createEventHub>;
