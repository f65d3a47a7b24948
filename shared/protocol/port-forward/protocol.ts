/**
 * @module The frames of a `port-forward` session stream (docs/session-streams.md, port-forward):
 * many TCP connections over one stream, each with its own id and its own credit window, so a
 * slow or stalled connection never holds up another and nothing waits for an acknowledgement of
 * each chunk (Mender's port forward is stop-and-wait with 4 KiB chunks; AWS localproxy has no
 * window per connection). Flow control follows SSH's channels (RFC 4254 §5.2): a side sends at
 * most the window its peer granted, and the peer grants more as it hands bytes on.
 *
 * Text frames carry the control messages below, one JSON object each. Binary frames carry data
 * records, `id (u32 BE) | length (u32 BE) | bytes`; like every binary stream of a session, they
 * form one byte stream whose frame boundaries mean nothing, so a record may span frames and a
 * frame may hold several records.
 */
import * as z from 'zod/mini';
import { STREAM_CLOSE } from '../session-stream';

/** Bytes a side may send on one connection before its peer grants more (the initial window). */
export const FORWARD_WINDOW = 1024 * 1024;
/**
 * A receiver may widen a connection's window up to this by granting more than it received, while
 * its own reader keeps up and the sender keeps running into the window: one connection's speed
 * is bounded by window ÷ round trip, and a stalled reader never widens its own.
 */
export const MAX_FORWARD_WINDOW = 8 * 1024 * 1024;
/** What one stream's widened windows may add up to beyond the initial ones, on each side. */
export const STREAM_WINDOW_BUDGET = 32 * 1024 * 1024;
/** A receiver grants credit once this much has been handed on (or when its socket drained). */
export const CREDIT_BATCH = 256 * 1024;
/** The largest data record's payload. */
export const MAX_RECORD = 256 * 1024;
export const RECORD_HEADER_BYTES = 8;
/** Connection ids are chosen by the client, from 1 up to this. */
export const MAX_CONNECTION_ID = 0xffff_ffff;

/**
 * This protocol's error codes: why a connection was reset (a `reset` message's `reason`, shown to
 * the user), one catalogue with what each means. Besides, a stream whose peer broke the protocol
 * closes with FORWARD_PROTOCOL_ERROR.
 */
export const RESET_REASONS = {
  refused: 'the device could not connect: the target refused',
  unreachable: 'the device could not connect: no route to the target, or its name did not resolve',
  timed_out: 'the device could not connect: no answer in time',
  not_allowed: "the target is not one of the session's, or outside the device's --forward-allow",
  limit: 'the device holds as many connections for the session as it may (--forward-max-connections)',
  idle: "no byte either way for the device's --forward-idle-timeout",
  closed: "one side's TCP connection failed or was aborted, or the stream ended",
  protocol: 'a side broke this protocol for the connection (it sent past its window)',
  error: 'anything else, or a reason this side does not know',
} as const;
export type ResetReason = keyof typeof RESET_REASONS;

const connectionId = z.int().check(z.gte(1), z.lte(MAX_CONNECTION_ID));

/** Client → device: open connection `id` to `target` (one of the session's targets, `HOST:PORT`). */
export const openMessage = z.object({ type: z.literal('open'), id: connectionId, target: z.string().check(z.maxLength(300)) });
/** Device → client: connection `id` reached its target; data may flow both ways. */
export const openedMessage = z.object({ type: z.literal('opened'), id: connectionId });
/** Either way: the sender handed `bytes` more of `id`'s data on; the receiver may send that much more. */
export const creditMessage = z.object({ type: z.literal('credit'), id: connectionId, bytes: z.int().check(z.gte(1), z.lte(MAX_CONNECTION_ID)) });
/** Either way: the sender's side of `id` has no more data (its TCP peer half-closed: a FIN). */
export const endMessage = z.object({ type: z.literal('end'), id: connectionId });
/** Either way: connection `id` is gone (aborted, refused, timed out); the receiver drops it too. */
export const resetMessage = z.object({
  type: z.literal('reset'),
  id: connectionId,
  // Any short word: a reason a newer peer adds must not break the stream of an older one.
  reason: z.string().check(z.minLength(1), z.maxLength(32)),
  message: z.optional(z.string().check(z.maxLength(500))),
});

export const forwardMessage = z.discriminatedUnion('type', [openMessage, openedMessage, creditMessage, endMessage, resetMessage]);
export type ForwardMessage = z.infer<typeof forwardMessage>;
export type OpenMessage = z.infer<typeof openMessage>;
export type ResetMessage = z.infer<typeof resetMessage>;

/** A reset's reason as this side knows it: one of RESET_REASONS, or `error` for one it does not. */
export const knownReason = (reason: string): ResetReason => (Object.hasOwn(RESET_REASONS, reason) ? (reason as ResetReason) : 'error');

/** The header of a data record carrying `length` bytes of connection `id`. */
export function recordHeader(id: number, length: number): Buffer {
  const header = Buffer.allocUnsafe(RECORD_HEADER_BYTES);
  header.writeUInt32BE(id, 0);
  header.writeUInt32BE(length, 4);
  return header;
}

/** Close code of a stream whose peer broke this protocol (an unparsable frame or record). */
export const FORWARD_PROTOCOL_ERROR = STREAM_CLOSE.protocolViolation;
