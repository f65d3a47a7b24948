/**
 * @module What the relay and the cluster's control node ask of the database, answered from the
 * store: whether an agent's credential is its device's, and what an open session's stream may do.
 */
import type { Store } from '../api/store/index';
import type { AgentAuthenticator } from '../relay/credentials';
import { agentKey, proofMatches, streamProof } from '../shared/auth/agent-proofs';
import type { StreamGrant } from '../shared/protocol/session-stream';

/** An agent's token, or its proof for a data stream, checked against the device's stored token hash. */
export function agentAuthenticator(store: Store): AgentAuthenticator {
  return async (deviceId, credential) => {
    const key = await store.devices.tokenHash(deviceId);
    if (key === undefined) return false;
    return 'token' in credential ? proofMatches(key, agentKey(credential.token)) : proofMatches(streamProof(key, credential.streamId), credential.proof);
  };
}

/** An open session's grant (what a stream of it may do), from the database. */
export async function openSessionOf(store: Store, now: () => number, sessionId: string): Promise<StreamGrant | undefined> {
  const s = await store.sessions.get(sessionId);
  if (!s || s.status !== 'open' || Date.parse(s.expires_at) <= now()) return undefined;
  return { sessionId, deviceId: s.device_id, protocol: s.protocol, expiresAt: s.expires_at, ...(s.targets && { targets: s.targets }) };
}
