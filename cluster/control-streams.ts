/**
 * @module The control node's side of session streams across nodes (docs/cluster.md): it checks the
 * proofs and client credentials nodes bring (digests, never the secrets themselves), remembers
 * which node it granted each session's stream to, and only for such a stream sends `stream.open`
 * to the device, built from its own records and signed for the agent, through the node that
 * holds it. Byte counts, recordings, client attachment and refusals are taken from a node only
 * for the streams and agents it holds.
 */
import {
  agentAuthRequest,
  bytesRequest,
  CONTROL_VERBS,
  nameOfRun,
  nodeSubject,
  sentReply,
  streamAuthRequest,
  streamOpenRequest,
  streamRefusedMessage,
  streamsMessage,
} from '../shared/protocol/cluster';
import { nodeAgentProof, proofMatches, streamOpenSignature, streamProof } from '../shared/auth/agent-proofs';
import type { RelayToAgentMessage } from '../shared/protocol/control-channel';
import type { Logger } from '../shared/log';
import type { StreamAccess, StreamGrant } from '../shared/protocol/session-stream';
import type { Bus } from './bus';
import type { ControlPresence } from './control-presence';
import type { LocalRelay } from './local-relay';

type StreamOpen = Extract<RelayToAgentMessage, { type: 'stream.open' }>;

/** A node asks for `stream.open` right after it granted the client; a grant older than this opens nothing. */
const STREAM_OPEN_WINDOW_MS = 60_000;

export interface StreamsApi {
  /** The SHA-256 of a device's agent token, the key of its proofs; undefined: no such device. */
  agentKey(deviceId: string): Promise<string | undefined>;
  authorizeStream(sessionId: string, credentials: { ticketDigest?: string; bearerDigest?: string }): Promise<StreamAccess>;
  /** The grant of an open session as the database says it (undefined when it is not open). */
  openSession(sessionId: string): Promise<StreamGrant | undefined>;
  recordBytes(counts: Map<string, { toDevice: number; fromDevice: number }>): Promise<void>;
  /** Clients joined or left a session's stream (a session with none goes idle). */
  streamClients?: { attached(sessionId: string): void; detached(sessionId: string): void } | undefined;
}

export interface ControlStreamsDeps {
  bus: Bus;
  run: string;
  publicUrl: string;
  log: Logger;
  api: StreamsApi;
  presence: ControlPresence;
  localRelay: () => LocalRelay | undefined;
  broadcastRefused(deviceId: string, streamId: string, message: string): void;
}

export function createControlStreams(deps: ControlStreamsDeps) {
  const { bus, log, api, presence } = deps;
  const mono = () => performance.now();
  /**
   * Session → what its stream may do, and node name → when its stream was last granted to that
   * node (kept while the session is open).
   */
  const granted = new Map<string, { grant: StreamGrant; nodes: Map<string, number> }>();

  function grantedTo(name: string, sessionId: string, within = Infinity): boolean {
    const at = granted.get(sessionId)?.nodes.get(name);
    return at !== undefined && mono() - at <= within;
  }

  /** Signs `msg` for the device's agent, to dial `url`. */
  async function signed(deviceId: string, msg: StreamOpen, url: string): Promise<StreamOpen | undefined> {
    const key = await api.agentKey(deviceId);
    if (key === undefined) return undefined;
    const out = { ...msg, url };
    return { ...out, sig: streamOpenSignature(key, { device_id: deviceId, ...out }) };
  }

  /** Sends `stream.open` to the device through the node that holds it; true when that node handed it over. */
  async function route(deviceId: string, msg: StreamOpen): Promise<boolean> {
    if (deps.localRelay()?.sendToAgent(deviceId, msg)) return true;
    const holder = presence.holders.holder(deviceId);
    if (!holder || holder.node === deps.run) return false;
    const reply = await bus.request(nodeSubject(nameOfRun(holder.node)), { type: 'agent.send', device_id: deviceId, message: msg }, sentReply);
    return reply.sent;
  }

  function listen(): void {
    bus.onNode(CONTROL_VERBS.agentAuth, agentAuthRequest, async ({ node: name, body, reply }) => {
      const key = await api.agentKey(body.device_id);
      const expected =
        key === undefined ? undefined : body.stream_id !== undefined ? streamProof(key, body.stream_id) : nodeAgentProof(key, name, body.device_id);
      reply({ ok: expected !== undefined && proofMatches(expected, body.proof) });
    });
    bus.onNode(CONTROL_VERBS.streamAuth, streamAuthRequest, async ({ node: name, body, reply }) => {
      const access = await api.authorizeStream(body.session_id, {
        ...(body.ticket_digest !== undefined && { ticketDigest: body.ticket_digest }),
        ...(body.bearer_digest !== undefined && { bearerDigest: body.bearer_digest }),
      });
      if (access.ok) {
        let entry = granted.get(body.session_id);
        if (!entry) granted.set(body.session_id, (entry = { grant: access.grant, nodes: new Map() }));
        entry.nodes.set(name, mono());
      }
      reply(access);
    });
    bus.onNode(CONTROL_VERBS.streamOpen, streamOpenRequest, async ({ node: name, body, reply }) => {
      const session = grantedTo(name, body.session_id, STREAM_OPEN_WINDOW_MS) ? await api.openSession(body.session_id) : undefined;
      const url = presence.urlOf(name);
      if (!session || url === undefined) {
        log.warn('refused stream.open for a stream this node was not granted', { node: name, session_id: body.session_id });
        return reply({ sent: false });
      }
      const msg = await signed(
        session.deviceId,
        {
          type: 'stream.open',
          session_id: session.sessionId,
          stream_id: body.stream_id,
          protocol: session.protocol,
          expires_at: session.expiresAt,
          ...(session.targets && { targets: [...session.targets] }),
          // What the client asked for where it joined; a mode means something to shell sessions only.
          ...(body.mode === 'exec' && session.protocol === 'shell' && { mode: body.mode }),
        },
        url,
      );
      if (!msg) return reply({ sent: false });
      reply({ sent: await route(session.deviceId, msg).catch(() => false) });
    });
    bus.onNode(CONTROL_VERBS.bytes, bytesRequest, async ({ node: name, body, reply }) => {
      const counts = body.counts.filter(([sessionId]) => grantedTo(name, sessionId));
      await api.recordBytes(new Map(counts.map(([id, toDevice, fromDevice]) => [id, { toDevice, fromDevice }])));
      reply({ ok: true });
    });
    bus.onNode(CONTROL_VERBS.streamRefused, streamRefusedMessage, ({ node: name, body }) => {
      if (!presence.holds(name, body.device_id)) return;
      if (!deps.localRelay()?.streamRefused(body.device_id, body.stream_id, body.message)) deps.broadcastRefused(body.device_id, body.stream_id, body.message);
    });
    bus.onNode(CONTROL_VERBS.streams, streamsMessage, ({ node: name, body }) => {
      const clients = api.streamClients;
      if (!clients) return;
      for (const id of body.attached) if (grantedTo(name, id)) clients.attached(id);
      for (const id of body.detached) if (grantedTo(name, id)) clients.detached(id);
    });
  }

  return {
    listen,
    /** For the local relay: a device held elsewhere gets `stream.open`, signed, to dial this node. */
    async routeLocal(deviceId: string, msg: StreamOpen): Promise<boolean> {
      const out = await signed(deviceId, msg, deps.publicUrl);
      return out ? route(deviceId, out) : false;
    },
    /**
     * The grant of a shell session whose stream was granted to node `name` (what it may record),
     * as it was when granted: the session is forgotten here when it closes.
     */
    recordable(name: string, sessionId: string): StreamGrant | undefined {
      const entry = granted.get(sessionId);
      if (!entry || !grantedTo(name, sessionId)) return undefined;
      return entry.grant.protocol === 'shell' ? entry.grant : undefined;
    },
    /** The session closed: no node may report on it any more. */
    sessionClosed(sessionId: string): void {
      granted.delete(sessionId);
    },
    /** A node's run ended: its grants go with it. */
    nodeGone(name: string): void {
      for (const [sessionId, entry] of granted) {
        entry.nodes.delete(name);
        if (entry.nodes.size === 0) granted.delete(sessionId);
      }
    },
  };
}
