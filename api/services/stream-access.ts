/**
 * @module Who may connect to a session's stream (CONTRACT 4.3): the holder of the session's
 * ticket, or the bearer token of its owner or an administrator, while the session is open.
 */
import { STREAM_CLOSE, type StreamAccess } from '../../shared/stream';
import type { Ticketer } from '../../shared/tickets';
import type { TokenResolver } from '../http/token-cache';
import type { Store } from '../store/index';
import { canSee } from './sessions';

export function createStreamAccess(store: Store, tokens: TokenResolver, ticketer: Ticketer, now: () => number) {
  const deny = (code: number, reason: string): StreamAccess => ({ ok: false, code, reason });

  return function authorizeStream(sessionId: string, credentials: { ticket?: string; bearer?: string }): StreamAccess {
    const session = store.sessions.get(sessionId);
    let tokenId: string | undefined;
    if (credentials.ticket !== undefined) {
      if (!session || !ticketer.verify(sessionId, credentials.ticket)) {
        return deny(STREAM_CLOSE.unknownSession, 'unknown session or bad ticket');
      }
    } else if (credentials.bearer !== undefined) {
      const principal = tokens.resolve(credentials.bearer, now());
      if (!principal) return deny(STREAM_CLOSE.noCredentials, 'token is unknown, expired or revoked');
      if (!session || !canSee(principal, session)) return deny(STREAM_CLOSE.unknownSession, 'unknown session');
      tokenId = principal.token_id;
    } else {
      return deny(STREAM_CLOSE.noCredentials, 'a ticket or a bearer token is required');
    }
    if (session.status === 'closed') {
      return session.close_reason === 'expired'
        ? deny(STREAM_CLOSE.sessionExpired, 'session expired')
        : deny(STREAM_CLOSE.sessionClosed, 'session closed');
    }
    if (Date.parse(session.expires_at) <= now()) return deny(STREAM_CLOSE.sessionExpired, 'session expired');
    return {
      ok: true,
      grant: { sessionId, deviceId: session.device_id, protocol: session.protocol, expiresAt: session.expires_at, ...(tokenId && { tokenId }) },
    };
  };
}
