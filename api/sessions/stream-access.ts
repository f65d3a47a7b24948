/**
 * @module Who may connect to a session's stream (docs/session-streams.md, connecting): the holder of the session's
 * ticket, or the bearer token (with scope `sessions:write`) of its owner or an administrator,
 * while the session is open and the token that opened it has not expired. A bearer-joined
 * stream carries its token's expiry: the broker ends it then (4401).
 */
import { STREAM_CLOSE, type StreamAccess } from '../../shared/session-stream';
import type { Ticketer } from '../../shared/tickets';
import { hasScope } from '../access';
import type { TokenResolver } from '../identity/token-cache';
import type { Store } from '../store/index';
import { canSee } from './sessions';

export function createStreamAccess(store: Store, tokens: TokenResolver, ticketer: Ticketer, now: () => number) {
  const deny = (code: number, reason: string): StreamAccess => ({ ok: false, code, reason });

  return function authorizeStream(sessionId: string, credentials: { ticket?: string; bearer?: string }): StreamAccess {
    const session = store.sessions.get(sessionId);
    let bearer: { tokenId: string; tokenExpiresAt?: string } | undefined;
    if (credentials.ticket !== undefined) {
      if (!session || !ticketer.verify(sessionId, credentials.ticket)) {
        return deny(STREAM_CLOSE.unknownSession, 'unknown session or bad ticket');
      }
    } else if (credentials.bearer !== undefined) {
      const principal = tokens.resolve(credentials.bearer, now());
      if (!principal) return deny(STREAM_CLOSE.noCredentials, 'token is unknown, expired or revoked');
      if (!session || !canSee(principal, session) || !hasScope(principal, 'sessions:write')) {
        return deny(STREAM_CLOSE.unknownSession, 'unknown session');
      }
      bearer = { tokenId: principal.token_id, ...(principal.expires_at !== null && { tokenExpiresAt: principal.expires_at }) };
    } else {
      return deny(STREAM_CLOSE.noCredentials, 'a ticket or a bearer token is required');
    }
    if (session.status === 'closed') {
      return session.close_reason === 'expired'
        ? deny(STREAM_CLOSE.sessionExpired, 'session expired')
        : deny(STREAM_CLOSE.sessionClosed, 'session closed');
    }
    if (Date.parse(session.expires_at) <= now()) return deny(STREAM_CLOSE.sessionExpired, 'session expired');
    // Closed by the expiry timer at any moment now; its ticket already admits no one.
    if (session.token_expires_at !== null && Date.parse(session.token_expires_at) <= now()) {
      return deny(STREAM_CLOSE.sessionClosed, 'session closed: the token that opened it expired');
    }
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
