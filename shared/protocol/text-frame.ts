/**
 * @module One text frame of tether's WebSocket protocols (the control channel, the session
 * streams, port-forward's control messages): a JSON object, taken only when it is one of the
 * messages the reader expects (each protocol's module holds their schemas).
 */
import type * as z from 'zod/mini';

/** The message a text frame holds; undefined when it is not JSON or not one of `schema`'s messages. */
export function parseTextFrame<T>(schema: z.ZodMiniType<T>, text: string): T | undefined {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return undefined;
  }
  const parsed = schema.safeParse(raw);
  return parsed.success ? parsed.data : undefined;
}
