/**
 * @module Optimistic concurrency (docs/http-api.md, concurrency): entity tags over what operators
 * change (a spec, a canary weight, labels, a token, a group's members), never over what the
 * runtime or an agent reports (replicas ready, presence), so a tag read a minute ago is still good
 * unless someone wrote; and the check a write makes against the caller's `If-Match`. A stale tag
 * is 412 `precondition_failed` carrying the current one. Without `If-Match` nothing is checked.
 */
import { createHash } from 'node:crypto';
import { ApiError } from './errors';

/** A strong entity tag over a resource's version-relevant fields. */
export function etagOf(version: unknown): string {
  return `"${createHash('sha256').update(JSON.stringify(version)).digest('base64url').slice(0, 27)}"`;
}

/**
 * A write's check, given the resource's current tag (`undefined`: it does not exist): throws 412
 * unless there is no `If-Match`, it is `*` and the resource exists, or it lists the current tag.
 */
export type Precondition = (current: string | undefined) => void;

/** No precondition: for callers inside the server, and requests without `If-Match`. */
export const unconditional: Precondition = () => {};

/** The check an `If-Match` header value makes. Weak tags (`W/"…"`) never match: If-Match compares strongly (RFC 9110). */
export function ifMatch(header: string): Precondition {
  const value = header.trim();
  if (value === '') return unconditional;
  const tags = value.split(',').map((t) => t.trim());
  return (current) => {
    if (current !== undefined && (tags.includes('*') || tags.includes(current))) return;
    const message =
      current === undefined
        ? 'If-Match was sent, but there is nothing to match: the resource does not exist'
        : `the resource changed since you read it (If-Match ${value}; it is ${current} now); read it again and retry`;
    throw new ApiError('precondition_failed', message, undefined, current === undefined ? undefined : { ETag: current });
  };
}
