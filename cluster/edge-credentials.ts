/**
 * @module What an edge asks the control node instead of a database (docs/cluster.md, edges): is
 * this agent who it says, may this client join this stream. Agents are vouched for by the node's
 * proof that it saw their token (never the token itself), clients by digests of their ticket or
 * bearer token. Answers are kept a short while, and dropped at once by the broadcasts that change
 * them.
 */
import { agentKey, nodeAgentProof, type AgentCredential } from '../shared/auth/agent-proofs';
import { agentAuthReply, CONTROL_VERBS, streamAuthReply, type BroadcastMessage, type ControlVerb } from '../shared/protocol/cluster';
import { sha256Hex } from '../shared/ids';
import type { StreamAccess, StreamGrant } from '../shared/protocol/session-stream';
import { ticketDigest as ticketDigestOf } from '../shared/auth/tickets';
import type { Bus } from './bus';

/** How long a proven agent token is taken on trust without asking again. */
export const AGENT_AUTH_CACHE_MS = 60_000;
/** How long a stream grant is reused for the same credentials. */
export const STREAM_AUTH_CACHE_MS = 5_000;

export interface EdgeCredentialsDeps {
  bus: Bus;
  /** The node's name: part of its proofs. */
  nodeName: string;
  /** The subject of a request to the control node. */
  subject(verb: ControlVerb): string;
}

export function createEdgeCredentials(deps: EdgeCredentialsDeps) {
  const { bus, nodeName, subject } = deps;
  const mono = () => performance.now();
  const agentProofs = new Map<string, { deviceId: string; until: number }>();
  /** The node proof of each device whose agent this node admitted, sent with its presence. */
  const heldProofs = new Map<string, { proof: string; at: number }>();
  const grants = new Map<string, { grant: StreamGrant; until: number }>();

  const dropGrants = (gone: (grant: StreamGrant) => boolean) => {
    for (const [k, v] of grants) if (gone(v.grant)) grants.delete(k);
  };
  const dropProofsOf = (deviceId: string) => {
    for (const [k, v] of agentProofs) if (v.deviceId === deviceId) agentProofs.delete(k);
    heldProofs.delete(deviceId);
  };

  return {
    /**
     * An agent's token (its control channel) becomes the node's proof, which the control node
     * checks; a data stream's proof goes as it came (it is bound to its stream already).
     */
    async authenticateAgent(deviceId: string, credential: AgentCredential): Promise<boolean> {
      if ('streamId' in credential) {
        const reply = await bus.request(
          subject(CONTROL_VERBS.agentAuth),
          { device_id: deviceId, proof: credential.proof, stream_id: credential.streamId },
          agentAuthReply,
        );
        return reply.ok;
      }
      const proof = nodeAgentProof(agentKey(credential.token), nodeName, deviceId);
      const key = `${deviceId}\n${proof}`;
      const cached = agentProofs.get(key);
      let ok = cached !== undefined && cached.until > mono();
      if (!ok) {
        ok = (await bus.request(subject(CONTROL_VERBS.agentAuth), { device_id: deviceId, proof }, agentAuthReply)).ok;
        if (ok) agentProofs.set(key, { deviceId, until: mono() + AGENT_AUTH_CACHE_MS });
      }
      if (ok) heldProofs.set(deviceId, { proof, at: mono() });
      return ok;
    },

    async authorizeStream(sessionId: string, credentials: { ticket?: string; bearer?: string }): Promise<StreamAccess> {
      const ticketDigest = credentials.ticket === undefined ? undefined : ticketDigestOf(credentials.ticket);
      const bearerDigest = credentials.bearer === undefined ? undefined : sha256Hex(credentials.bearer);
      const key = `${sessionId}\n${ticketDigest ?? ''}\n${bearerDigest ?? ''}`;
      const cached = grants.get(key);
      const now = Date.now();
      const fresh = (g: StreamGrant) => Date.parse(g.expiresAt) > now && (g.tokenExpiresAt === undefined || Date.parse(g.tokenExpiresAt) > now);
      if (cached && cached.until > mono() && fresh(cached.grant)) return { ok: true, grant: cached.grant };
      const reply = await bus.request(
        subject(CONTROL_VERBS.streamAuth),
        {
          session_id: sessionId,
          ...(ticketDigest !== undefined && { ticket_digest: ticketDigest }),
          ...(bearerDigest !== undefined && { bearer_digest: bearerDigest }),
        },
        streamAuthReply,
      );
      if (reply.ok) grants.set(key, { grant: reply.grant, until: mono() + STREAM_AUTH_CACHE_MS });
      return reply;
    },

    /** The proof sent with a device's presence (empty when the node never proved it: the control node refuses it). */
    proofOf: (deviceId: string): string => heldProofs.get(deviceId)?.proof ?? '',

    /** Drops what expired, and the proofs of agents no longer `held` here. */
    prune(held: ReadonlySet<string>): void {
      const t = mono();
      for (const [k, v] of agentProofs) if (v.until <= t) agentProofs.delete(k);
      for (const [k, v] of grants) if (v.until <= t) grants.delete(k);
      for (const [k, v] of heldProofs) if (!held.has(k) && t - v.at > AGENT_AUTH_CACHE_MS) heldProofs.delete(k);
    },

    /** Drops the answers a broadcast changed. */
    forget(msg: BroadcastMessage): void {
      switch (msg.type) {
        case 'session.closed':
        case 'session.extended': // a grant kept names the old expiry
          return dropGrants((g) => g.sessionId === msg.session_id);
        case 'token.revoked':
          return dropGrants((g) => g.tokenId === msg.token_id);
        case 'device.token_rotated':
          return dropProofsOf(msg.device_id);
        case 'device.deleted':
          dropProofsOf(msg.device_id);
          return dropGrants((g) => g.deviceId === msg.device_id);
        default:
          return;
      }
    },
  };
}
export type EdgeCredentials = ReturnType<typeof createEdgeCredentials>;
