/**
 * @module Every message of the agent control channel, with who sends it and when.
 *
 * The agent dials `GET /v1/agent/connect` with the subprotocol `AGENT_SUBPROTOCOL` and the
 * headers below; the relay answers 101 or an HTTP error with a JSON body
 * `{error, message, status}`. Once connected, each side sends text frames holding one JSON object
 * of the shapes below; the relay pings every `heartbeat_ms` and drops an agent that misses two.
 */
import * as z from 'zod/mini';
import { jobAckMessage, jobCancelMessage, jobResultMessage, jobRunMessage, jobsRunningMessage } from './jobs';

/** Path of the agent control WebSocket. */
export const AGENT_CONNECT_PATH = '/v1/agent/connect';

/**
 * Path of a data WebSocket the agent dials when the relay asks (`stream.open`); the relay
 * splices it to the client's stream byte for byte. Same headers as the control channel, plus
 * the stream id.
 */
export const AGENT_STREAM_PATH = '/v1/agent/stream';

/** Upgrade request headers the agent sends (besides `Authorization: Bearer <device token>`). */
export const AGENT_HEADERS = {
  deviceId: 'x-tether-device-id',
  agentVersion: 'x-tether-agent-version',
  streamId: 'x-tether-stream-id',
  /**
   * On a data stream, instead of the token: `streamProof(agentKey(token), stream id)`
   * (`shared/auth/agent-proofs.ts`), so the node the stream goes to never sees the agent's token.
   */
  streamProof: 'x-tether-stream-proof',
  /**
   * The agent's port-forward allow-list, canonical `HOST:PORT` patterns joined by commas
   * (`shared/protocol/port-forward/targets.ts`). An agent that sends none does not forward ports.
   */
  forwardAllow: 'x-tether-forward-allow',
} as const;

/** Close codes on the agent control socket. */
export const AGENT_CLOSE = {
  /** The relay is shutting down; reconnect with backoff. */
  serverShutdown: 1001,
  /** A newer connection of the same device replaced this one. */
  replaced: 4409,
  /** The device was deleted from the registry; its token no longer works. */
  deviceDeleted: 4410,
  /** The device's agent token was replaced (`POST /v1/devices/{id}/agent-token`); the old one no longer works. */
  tokenRotated: 4411,
  /** The agent sent something that is not a valid control message. */
  protocolError: 4400,
} as const;

/** The protocols a session speaks (the API, on classic zod, validates them with an enum of its own). */
export const SESSION_PROTOCOLS = ['diagnostics', 'shell', 'file-transfer', 'port-forward'] as const;
export const sessionProtocolSchema = z.enum(SESSION_PROTOCOLS);
export type SessionProtocol = z.infer<typeof sessionProtocolSchema>;

/**
 * What a `shell` session's stream runs, as its client asks in the stream URL (`&mode=exec`;
 * docs/session-streams.md, exec): a login shell in a PTY (`shell`, the default), or one command
 * without a PTY (`exec`). The URL's query parameter and `stream.open`'s field carry it.
 */
export const STREAM_MODES = ['shell', 'exec'] as const;
export const streamModeSchema = z.enum(STREAM_MODES);
export type StreamMode = z.infer<typeof streamModeSchema>;
/** The stream URL's query parameter that names the mode. */
export const STREAM_MODE_PARAM = 'mode';

/**
 * Why a session closed; `token_expired`: the token that opened it expired; `idle`: no client was
 * connected to its stream for the server's idle time (`TETHER_SESSION_IDLE_SECONDS`);
 * `access_expired` / `access_revoked`: the access grant it was opened under ended or was revoked
 * (docs/access.md).
 */
export const closeReasonSchema = z.enum([
  'closed',
  'expired',
  'token_expired',
  'device_deleted',
  'server_shutdown',
  'idle',
  'access_expired',
  'access_revoked',
]);
export type CloseReason = z.infer<typeof closeReasonSchema>;

/**
 * The reasons `session.close` carries to agents: those of protocol v1. Agents in the field
 * refuse a reason they do not know, so a newer reason travels as the v1 one it is a case of.
 */
export const agentCloseReasonSchema = z.enum(['closed', 'expired', 'device_deleted', 'server_shutdown']);
export type AgentCloseReason = z.infer<typeof agentCloseReasonSchema>;
export const agentCloseReason = (reason: CloseReason): AgentCloseReason =>
  reason === 'access_expired' ? 'expired' : reason === 'token_expired' || reason === 'idle' || reason === 'access_revoked' ? 'closed' : reason;

/** Relay → agent, first message after the upgrade: the relay's view of this connection. */
export const welcomeMessage = z.object({
  type: z.literal('welcome'),
  device_id: z.string(),
  heartbeat_ms: z.int().check(z.positive()),
  server_version: z.string(),
});

/**
 * Relay → agent: a session was opened for this device. The agent remembers its expiry and
 * enforces it on its own, so a lost close message can never leave a handler running.
 */
export const sessionOpenedMessage = z.object({
  type: z.literal('session.opened'),
  session_id: z.string(),
  protocol: sessionProtocolSchema,
  expires_at: z.string(),
});

/** Relay → agent: a session closed or expired; end its handler within 5 seconds. */
export const sessionCloseMessage = z.object({
  type: z.literal('session.close'),
  session_id: z.string(),
  reason: agentCloseReasonSchema,
});

/**
 * Relay → agent: a client connected to a session's stream; dial `AGENT_STREAM_PATH` with this
 * `stream_id` within 10 seconds and serve `protocol` on it until either side closes. A
 * port-forward session's `targets` are the only places its connections may go.
 */
export const streamOpenMessage = z.object({
  type: z.literal('stream.open'),
  session_id: z.string(),
  stream_id: z.string(),
  protocol: sessionProtocolSchema,
  expires_at: z.string(),
  targets: z.optional(z.array(z.string()).check(z.maxLength(8))),
  /**
   * Where to dial the data stream when it is not the server this control channel goes to: the
   * public URL of the cluster node the client joined (docs/cluster.md). An agent connected over
   * TLS dials it only over TLS.
   */
  url: z.optional(z.string().check(z.maxLength(2048))),
  /**
   * With a `url` that is not one of the agent's own servers: the control node's signature of this
   * message (`streamOpenSignature`, `shared/auth/agent-proofs.ts`). The agent dials no other URL.
   */
  sig: z.optional(z.string().check(z.maxLength(128))),
  /**
   * A `shell` stream's mode; absent means `shell`. Sent only for `exec`, so a shell stream's
   * message is what it always was. Agents that predate it drop it (objects here are not strict)
   * and run a shell, which a client that asked for exec tells by the missing `exec.started`. Not
   * covered by `sig`: the node that holds the agent may send an unsigned `stream.open` itself, and
   * a mode runs nothing the client did not ask for (an exec stream runs only the client's argv).
   */
  mode: z.optional(streamModeSchema),
});

/** Jobs (`./jobs.ts`): an agent that predates them never gets these (it sends no `jobs.running`). */
export const relayToAgentMessage = z.discriminatedUnion('type', [
  welcomeMessage,
  sessionOpenedMessage,
  sessionCloseMessage,
  streamOpenMessage,
  jobRunMessage,
  jobAckMessage,
  jobCancelMessage,
]);
export type RelayToAgentMessage = z.infer<typeof relayToAgentMessage>;

/** Agent → relay: the agent ended a session's handler (acknowledges `session.close`). */
export const sessionEndedMessage = z.object({
  type: z.literal('session.ended'),
  session_id: z.string(),
});

/** Agent → relay: the agent will not serve a stream (e.g. its session cap is reached). */
export const streamRefusedMessage = z.object({
  type: z.literal('stream.refused'),
  stream_id: z.string(),
  message: z.string(),
});

export const agentToRelayMessage = z.discriminatedUnion('type', [sessionEndedMessage, streamRefusedMessage, jobsRunningMessage, jobResultMessage]);
export type AgentToRelayMessage = z.infer<typeof agentToRelayMessage>;
