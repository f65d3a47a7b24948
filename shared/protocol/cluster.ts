/**
 * @module The messages nodes exchange over NATS (docs/cluster.md): their subjects, the
 * subject permissions of each node, and the shapes. Every payload is one JSON object; each side
 * validates what it receives, as it would a peer's WebSocket frame. Bytes of session streams never
 * travel here, only control: proofs to check, presence, byte counts, shell recordings, and
 * commands to the node that holds an agent.
 *
 * Who sent a message is told by its subject, never by its body: a node publishes only under
 * `tether.control.<its name>.…` and reads only its own commands, its own replies and the
 * broadcasts (NATS enforces it with the permissions of the node's credentials, `natsPermissions`),
 * so the control node takes the name in the subject as proven.
 */
import * as z from 'zod/mini';
import { relayToAgentMessage, closeReasonSchema, sessionProtocolSchema, streamModeSchema } from './control-channel';

/** What a node asks or tells the control node, on `tether.control.<node name>.<verb>`. */
export const CONTROL_VERBS = {
  /** Request: does the node hold this device's agent (its node proof), or may it join this stream (a stream proof)? */
  agentAuth: 'agent-auth',
  /** Request: may the client with these credentials (digests) join this session's stream here? */
  streamAuth: 'stream-auth',
  /** Request: send `stream.open` to the device, signed, through the node that holds it, to dial the asking node. */
  streamOpen: 'stream-open',
  /** Request, every node heartbeat: I am alive; answers whether to resend presence. */
  node: 'node',
  /** Agents came and went (or a full snapshot of them). */
  presence: 'presence',
  /** Heartbeats of agents, for `last_seen_at`. */
  seen: 'seen',
  /** Request: byte counts of session streams (answered once they are written). */
  bytes: 'bytes',
  /** The frames of a recorded stream (headers say which stream). */
  recording: 'recording',
  /** An agent here refused a stream whose client may wait on another node. */
  streamRefused: 'stream-refused',
  /** Clients joined or left session streams here (a session with no client goes idle). */
  streams: 'streams',
} as const;
export type ControlVerb = (typeof CONTROL_VERBS)[keyof typeof CONTROL_VERBS];

/** Control → every node: something changed that every node must act on. */
export const BROADCAST_SUBJECT = 'tether.broadcast';

/** A node's messages to the control node. */
export const controlSubject = (node: string, verb: ControlVerb): string => `tether.control.${node}.${verb}`;
/** What the control node subscribes to for one verb, from every node. */
export const controlWildcard = (verb: ControlVerb): string => `tether.control.*.${verb}`;
/** The node name a `controlSubject` names (proven by the bus's permissions). */
export const nodeOfSubject = (subject: string): string => subject.split('.')[2] ?? '';

/** Request, control → one node: commands for the agents it holds. */
export const nodeSubject = (node: string): string => `tether.node.${node}`;
/** Where a node's requests get their replies: nobody else may read them. */
export const inboxPrefix = (node: string): string => `_INBOX.${node}`;

/** The name of the control node's credentials. */
export const CONTROL_NAME = 'control';
/** Node names: a NATS subject token, and a file name (`edge-NAME.creds`). */
export const NODE_NAME = /^[a-z0-9][a-z0-9-]{0,46}$/;

/**
 * What a node may publish and subscribe to (`tether cluster nats-config` writes these into its
 * credentials). Replies to requests it received are allowed besides (one per request).
 */
export function natsPermissions(name: string): { pub: string[]; sub: string[] } {
  // A peer (docs/peers.md) talks to the other peers only; edges join a cluster's one control node.
  if (name.startsWith('peer-')) return { pub: ['tether.peers.>'], sub: ['tether.peers.>', `${inboxPrefix(name)}.>`] };
  if (name === CONTROL_NAME) {
    return { pub: [BROADCAST_SUBJECT, nodeSubject('*')], sub: ['tether.control.>', `${inboxPrefix(name)}.>`] };
  }
  return { pub: [`tether.control.${name}.>`], sub: [nodeSubject(name), BROADCAST_SUBJECT, `${inboxPrefix(name)}.>`] };
}

/**
 * A node's id for one run: its name and 8 random characters, so that its connection generations
 * (which start again at every run) never mix with an earlier run's.
 */
export const NODE_ID = /^[a-z0-9-]{1,64}$/;
export const nodeIdOf = (name: string, instance: string): string => `${name}-${instance}`;
/** Whether `id` is a run of the node `name` (what a node says of itself must match its subject). */
export const isRunOf = (name: string, id: string): boolean => id.length === name.length + 9 && id.startsWith(`${name}-`) && /^[a-z2-7]{8}$/.test(id.slice(-8));
/** The name of the node whose run is `id`. */
export const nameOfRun = (id: string): string => id.slice(0, -9);

const nodeId = z.string().check(z.regex(NODE_ID));
const deviceId = z.string().check(z.maxLength(64));
const sessionId = z.string().check(z.maxLength(64));
const proof = z.string().check(z.maxLength(64));
/** At most this many items in one presence, seen or streams message (NATS caps a message at 1 MiB). */
export const PART = 2_000;
const part = <T extends z.ZodMiniType>(item: T) => z.array(item).check(z.maxLength(PART));

export const agentAuthRequest = z.object({
  device_id: deviceId,
  proof,
  /** With a stream id: a stream proof (the agent dials that stream here); without: a node proof. */
  stream_id: z.optional(z.string().check(z.maxLength(64))),
});
export const agentAuthReply = z.object({ ok: z.boolean() });

/** The client's credentials, as SHA-256 digests (hex) of the ticket or bearer token: the API takes neither. */
export const streamAuthRequest = z.object({
  session_id: sessionId,
  ticket_digest: z.optional(z.string().check(z.maxLength(256))),
  bearer_digest: z.optional(z.string().check(z.maxLength(128))),
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

/** The stream `stream_id` of a session whose client joined the asking node, granted to it moments ago. */
export const streamOpenRequest = z.object({
  session_id: sessionId,
  stream_id: z.string().check(z.regex(/^[a-z2-7]{26}$/)),
  /** What the client asked the stream to run (`stream.open`'s `mode`); absent: a shell. */
  mode: z.optional(streamModeSchema),
});
/** `sent`: the node that holds the agent handed it the message. */
export const sentReply = z.object({ sent: z.boolean() });

export const nodeHeartbeat = z.object({
  node_id: nodeId,
  /** Where agents and clients reach the node (TETHER_PUBLIC_URL). */
  url: z.string().check(z.maxLength(2048)),
  /** Agents connected to the node now. */
  agents: z.int().check(z.nonnegative()),
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
  generation: z.int().check(z.nonnegative()),
  since: z.number(),
};
export const agentOnline = z.object({
  ...connection,
  agent_version: z.nullable(z.string().check(z.maxLength(64))),
  forward_allow: z.nullable(z.array(z.string().check(z.maxLength(300))).check(z.maxLength(64))),
  /** The node proof: the node saw this device's agent token. */
  proof,
});
export type AgentOnline = z.infer<typeof agentOnline>;
export const agentOffline = z.object({ device_id: deviceId, generation: z.int(), at: z.number() });
export type AgentOffline = z.infer<typeof agentOffline>;

export const presenceMessage = z.union([
  z.object({
    kind: z.literal('changes'),
    node_id: nodeId,
    online: part(agentOnline),
    offline: part(agentOffline),
  }),
  /** Every agent the node holds, in parts; after the last part, agents not in it are not on the node. */
  z.object({
    kind: z.literal('snapshot'),
    node_id: nodeId,
    snapshot_id: z.string().check(z.maxLength(64)),
    online: part(agentOnline),
    last: z.boolean(),
  }),
]);
export type PresenceMessage = z.infer<typeof presenceMessage>;

export const seenMessage = z.object({ node_id: nodeId, seen: part(z.tuple([deviceId, z.number()])) });

/** Bytes of one session in one report: no stream moves a tebibyte a second. */
const byteCount = z.int().check(z.nonnegative(), z.lte(2 ** 40));
export const bytesRequest = z.object({ counts: z.array(z.tuple([sessionId, byteCount, byteCount])).check(z.maxLength(10_000)) });
export const okReply = z.object({ ok: z.boolean() });

/** Headers of a recording message. */
export const RECORDING_HEADERS = { stream: 'tether-stream', kind: 'tether-kind' } as const;
/** The first message of a recorded stream names its session (the control node knows the rest); then frames; then `end`. */
export const recordingStart = z.object({ session_id: sessionId });

export const streamRefusedMessage = z.object({
  device_id: deviceId,
  stream_id: z.string().check(z.maxLength(64)),
  message: z.string().check(z.maxLength(200)),
});

/** Session streams whose client joined or left on the node. */
export const streamsMessage = z.object({ attached: part(sessionId), detached: part(sessionId) });

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
  /** A session's end moved (an extend): the node that holds its agent tells it, the one that holds its stream warns the client anew. */
  z.object({
    type: z.literal('session.extended'),
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

export const nodeCommand = z.object({ type: z.literal('agent.send'), device_id: deviceId, message: relayToAgentMessage });
