/**
 * @module Who holds a device's open session of a protocol: what a 409 on opening a session carries
 * besides the documented `{error, message, status}` (docs/http-api.md, sessions), so a client can
 * tell its own session from someone else's without reading the message. Only the username and
 * when it was opened: nothing else of a session the caller may not see.
 */
import * as z from 'zod/mini';

export interface SessionHolder {
  /** The username of the session's owner. */
  opened_by: string;
  /** When it was opened (ISO 8601 UTC). */
  opened_at: string;
}

/** `holder` of a 409 body, for clients to parse. */
export const sessionHolderSchema: z.ZodMiniType<SessionHolder> = z.object({ opened_by: z.string(), opened_at: z.string() });
