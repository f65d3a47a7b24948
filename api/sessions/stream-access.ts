/**
 * @module Who may connect to a session's stream (docs/session-streams.md, connecting): the owner
 * or an administrator, with a token of scope `sessions:write`, either as the bearer token itself or
 * through a ticket shown to that token (a ticket names its token: `shared/auth/tickets.ts`), while the
 * session is open and the token that opened it has not expired. A ticket admits no one once its
 * token is revoked or expired, or its user disabled or no longer allowed. Anyone but the owner
 * who is admitted is audited (`session.joined`, the joiner as actor, the token id as reason).
 * A bearer-joined stream carries its token's expiry: the relay ends it then (4401).
 */
import { STREAM_CLOSE, type StreamAccess } from '../../shared/protocol/session-stream';
import type { Ticketer } from '../../shared/auth/tickets';
import type { TokenResolver } from '../identity/token-cache';
import type { Store } from '../store/index';
import type { SessionRow } from '../store/sessions';
import type { Principal } from '../store/tokens';
import { mayJoin } from './sessions';

/**
 * A client's credentials for a stream: the ticket or the bearer token, or (from a cluster's edge,
 * which never passes them on) their digests: `ticketDigest()` of the ticket, SHA-256 hex of the token.
 */
export interface StreamCredentials {
  ticket?: string | undefined;
  bearer?: string | undefined;
  ticketDigest?: string | undefined;
  bearerDigest?: string | undefined;
}

export function createStreamAccess(store: Store, tokens: TokenResolver, ticketer: Ticketer, now: () => number) {
  const deny = (code: number, reason: string): StreamAccess => ({ ok: false, code, reason });

  /** The principal of the token a ticket was shown to, if that token still admits anyone. */
  async function ticketHolder(tokenId: string): Promise<Principal | undefined> {
    const token = await store.tokens.get(tokenId);
    if (!token || token.revoked_at !== null) return undefined;
    if (token.expires_at !== null && Date.parse(token.expires_at) <= now()) return undefined;
    const user = await store.users.get(token.username);
    if (!user || user.disabled) return undefined;
    return { ...token, role: user.role, kind: user.kind };
  }

  async function auditJoin(session: SessionRow, joiner: Principal): Promise<void> {
    await store.audit.append({
      event: 'session.joined',
      session_id: session.session_id,
      device_id: session.device_id,
      protocol: session.protocol,
      actor: joiner.username,
      owner: session.opened_by,
      reason: joiner.token_id,
      at: new Date(now()).toISOString(),
      trace_id: session.trace_id,
      targets: session.targets,
    });
  }

  /** Why the session admits no one any more, if it does not (the checks of an open session's ticket come after). */
  function ended(session: SessionRow): StreamAccess | undefined {
    if (session.status === 'closed') {
      return session.close_reason === 'expired' ? deny(STREAM_CLOSE.sessionExpired, 'session expired') : deny(STREAM_CLOSE.sessionClosed, 'session closed');
    }
    if (Date.parse(session.expires_at) <= now()) return deny(STREAM_CLOSE.sessionExpired, 'session expired');
    // Closed by the expiry timer at any moment now; its ticket already admits no one.
    if (session.token_expires_at !== null && Date.parse(session.token_expires_at) <= now()) {
      return deny(STREAM_CLOSE.sessionClosed, 'session closed: the token that opened it expired');
    }
    return undefined;
  }

  return async function authorizeStream(sessionId: string, credentials: StreamCredentials): Promise<StreamAccess> {
    const session = await store.sessions.get(sessionId);
    let bearer: { tokenId: string; tokenExpiresAt?: string } | undefined;
    let joiner: Principal | undefined;
    if (credentials.ticket !== undefined || credentials.ticketDigest !== undefined) {
      const tokenId =
        credentials.ticket !== undefined ? ticketer.verify(sessionId, credentials.ticket) : ticketer.verifyDigest(sessionId, credentials.ticketDigest!);
      if (!session || tokenId === undefined) return deny(STREAM_CLOSE.unknownSession, 'unknown session or bad ticket');
      // A genuine ticket of a closed session says so; of an open one, its token must still admit.
      const end = ended(session);
      if (end) return end;
      joiner = await ticketHolder(tokenId);
      if (!joiner || !mayJoin(joiner, session)) {
        return deny(STREAM_CLOSE.unknownSession, 'bad ticket: the token it was issued to may not join this session now');
      }
    } else if (credentials.bearer !== undefined || credentials.bearerDigest !== undefined) {
      joiner = credentials.bearer !== undefined ? await tokens.resolve(credentials.bearer, now()) : await tokens.resolveHash(credentials.bearerDigest!, now());
      if (!joiner) return deny(STREAM_CLOSE.noCredentials, 'token is unknown, expired or revoked');
      if (!session || !mayJoin(joiner, session)) return deny(STREAM_CLOSE.unknownSession, 'unknown session');
      const end = ended(session);
      if (end) return end;
      bearer = { tokenId: joiner.token_id, ...(joiner.expires_at !== null && { tokenExpiresAt: joiner.expires_at }) };
    } else {
      return deny(STREAM_CLOSE.noCredentials, 'a ticket or a bearer token is required');
    }
    // Audited when admitted: a join the relay then refuses (another client is connected) is
    // recorded too, rather than a join that happens going unrecorded.
    if (joiner.username !== session.opened_by) await auditJoin(session, joiner);
    return {
      ok: true,
      grant: {
        sessionId,
        deviceId: session.device_id,
        protocol: session.protocol,
        expiresAt: session.expires_at,
        ...(session.targets && { targets: session.targets }),
        ...bearer,
      },
    };
  };
}
