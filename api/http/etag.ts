/** @module `ETag` and `If-Match` on the wire (api/preconditions.ts has the rules). */
import type { Context } from 'koa';
import { ifMatch, type Precondition } from '../preconditions';

/** The request's `If-Match` as a check; no header: no check. */
export const ifMatchOf = (ctx: Context): Precondition => ifMatch(ctx.get('if-match'));

/** Sets the response's `ETag` (nothing when the resource is gone). */
export function setEtag(ctx: Context, tag: string | undefined): void {
  if (tag !== undefined) ctx.set('ETag', tag);
}
