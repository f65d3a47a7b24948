/**
 * @module Reading the `holder` of a 409 on opening a session (its schema is in
 * `shared/api/errors.ts`): a parser on zod/mini, for clients that must not load classic zod.
 */
import * as z from 'zod/mini';
import type { SessionHolder } from './errors';

export type { SessionHolder } from './errors';

/** `holder` of a 409 body, for clients to parse. */
export const sessionHolderSchema: z.ZodMiniType<SessionHolder> = z.object({ opened_by: z.string(), opened_at: z.string() });
