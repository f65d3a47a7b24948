/**
 * @module The messages broker nodes exchange over NATS (docs/cluster.md): their subjects and
 * shapes. Every payload is one JSON object; each side validates what it receives, as it would a
 * peer's WebSocket frame. Bytes of session streams never travel here, only control: credentials
 * to check, presence, byte counts, shell recordings, and commands to the node that holds an agent.
 */
import * as z from 'zod/mini';
import { brokerToAgentMessage, closeReasonSchema, sessionProtocolSchema } from './control-channel';

/** Subjects; requests expect one reply, the rest are published. */
export const SUBJECTS = {
  /** Request, edge → control: is this the agent token of this device? */
  agentAuth: 'tether.control.agent-auth',
  /** Request, edge → control: may these credentials join this session's stream? */
  streamAuth: 'tether.control.stream-auth',
  /** Request, any node → control: send `stream.open` to the device, through the node that holds it. */
  streamOpen: 'tether.control.stream-open',
  /** Request, edge → control, every node heartbeat: I am alive; answers whether to resend presence. */
  node: 'tether.control.node',
  /** Edge → control: agents came and went (or a full snapshot of them). */
  presence: 'tether.control.presence',
  /** Edge → control: heartbeats of agents, for `last_seen_at`. */
  seen: 'tether.control.seen',
  /** Request, edge → control: byte counts of session streams (answered once they are written). */
  bytes: 'tether.control.bytes',
  /** Edge → control: the frames of a recorded stream (headers say which stream). */
  recording: 'tether.control.recording',
  /** Control → every node: something changed that every node must act on. */
  broadcast: 'tether.broadcast',
} as const;

/** Request, control → one node: commands for the agents it holds. */
export const nodeSubject = (nodeId: string): string => `tether.node.${nodeId}`;

/** Node ids are safe in a subject token. */
export const NODE_ID = /^[a-z0-9-]{1,64}$/;
const nodeId = z.string().check(z.regex(NODE_ID));
const deviceId = z.string().check(z.maxLength(64));
const sessionId = z.string().check(z.maxLength(64));

export const agentAuthRequest = z.object({ device_id: deviceId, token: z.string().check(z.maxLength(512)) });
export const agentAuthReply = z.object({ ok: z.boolean() });

export const streamAuthRequest = z.object({
  session_id: sessionId,
  ticket: z.optional(z.string().check(z.maxLength(512))),
  bearer: z.optional(z.string().check(z.maxLength(512))),
});
export const streamGrantSchema = z.object({
  sessionId: sessionId,
  deviceId: deviceId,
  protocol: sessionProtocolSchema,
  expiresAt: z.string(),
  targets: z.optional(z.array(z.string()).check(z.maxLength(8))),
  tokenId: z.optional(z.string()),
  tokenExpiresAt: z.optional(z.string()),
});
export const streamAuthReply = z.union([
  z.object({ ok: z.literal(true), grant: streamGrantSchema }),
  z.object({ ok: z.literal(false), code: z.int(), reason: z.string() }),
]);

export const streamOpenRequest = z.object({ device_id: deviceId, message: brokerToAgentMessage });
/** `sent`: the node that holds the agent handed it the message. */
export const sentReply = z.object({ sent: z.boolean() });

export const nodeHeartbeat = z.object({
  node_id: nodeId,
  /** Where agents and clients reach the node (TETHER_PUBLIC_URL). */
  url: z.string(),
  /** Agents connected to the node now. */
  agents: z.int(),
  /** The digest of those connections (cluster/holders.ts `digestOf`): the control node compares it with what it holds. */
  digest: z.optional(z.string().check(z.regex(/^[0-9a-f]{16}$/))),
});
/**
 * `resync`: send a snapshot: the control node does not know this node (it started since), or
 * the node's digest has differed from what it holds on two heartbeats in a row (reports were lost).
 */
export const nodeHeartbeatReply = z.object({ control_id: nodeId, resync: z.boolean() });

/**
 * One agent connection: `generation` tells one connection from another on a node, `since` (wall
 * clock, ms) orders connections across nodes. A device is online while any connection reported
 * has not been reported ended; the latest is where it is reached.
 */
const connection = {
  device_id: deviceId,
  generation: z.int(),
  since: z.number(),
};
export const agentOnline = z.object({
  ...connection,
  agent_version: z.nullable(z.string().check(z.maxLength(64))),
  forward_allow: z.nullable(z.array(z.string()).check(z.maxLength(64))),
});
export type AgentOnline = z.infer<typeof agentOnline>;
export const agentOffline = z.object({ device_id: deviceId, generation: z.int(), at: z.number() });
export type AgentOffline = z.infer<typeof agentOffline>;

export const presenceMessage = z.union([
  z.object({
    kind: z.literal('changes'),
    node_id: nodeId,
    online: z.array(agentOnline),
    offline: z.array(agentOffline),
  }),
  /** Every agent the node holds, in parts; after the last part, agents not in it are not on the node. */
  z.object({
    kind: z.literal('snapshot'),
    node_id: nodeId,
    snapshot_id: z.string().check(z.maxLength(64)),
    online: z.array(agentOnline),
    last: z.boolean(),
  }),
]);
export type PresenceMessage = z.infer<typeof presenceMessage>;

export const seenMessage = z.object({ node_id: nodeId, seen: z.array(z.tuple([deviceId, z.number()])) });

export const bytesRequest = z.object({ counts: z.array(z.tuple([sessionId, z.number(), z.number()])) });
export const okReply = z.object({ ok: z.boolean() });

/** Headers of a recording message. */
export const RECORDING_HEADERS = { stream: 'tether-stream', kind: 'tether-kind', node: 'tether-node' } as const;
/** The first message of a recorded stream carries its grant; then frames; then `end`. */
export const recordingStart = z.object({ grant: streamGrantSchema });

export const broadcastMessage = z.discriminatedUnion('type', [
  /** A session closed: its streams end on whatever node they are, its agent is told. */
  z.object({ type: z.literal('session.closed'), session_id: sessionId, device_id: deviceId, reason: closeReasonSchema }),
  /** A session opened: the node that holds its agent tells it. */
  z.object({
    type: z.literal('session.opened'),
    session_id: sessionId,
    device_id: deviceId,
    protocol: sessionProtocolSchema,
    expires_at: z.string(),
  }),
  z.object({ type: z.literal('token.revoked'), token_id: z.string() }),
  z.object({ type: z.literal('device.deleted'), device_id: deviceId }),
  z.object({ type: z.literal('device.token_rotated'), device_id: deviceId }),
  /** An agent refused a stream whose client may sit on another node. */
  z.object({ type: z.literal('stream.refused'), device_id: deviceId, stream_id: z.string(), message: z.string() }),
  /** The control node (re)started or reconnected: every node sends a presence snapshot. */
  z.object({ type: z.literal('resync'), control_id: nodeId }),
]);
export type BroadcastMessage = z.infer<typeof broadcastMessage>;

export const nodeCommand = z.object({ type: z.literal('agent.send'), device_id: deviceId, message: brokerToAgentMessage });
