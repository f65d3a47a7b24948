/**
 * @module A session stream's close code and reason in plain words for the person at the
 * terminal. The codes and reason texts are the shared ones (docs/session-streams.md, close codes);
 * a reason this client does not know still gets the words of its code.
 */
import {
  DEVICE_JOIN_TIMEOUT_MS,
  STREAM_CLOSE,
  STREAM_END,
  TOKEN_END_TEXT,
  type StreamEndReason,
} from '../shared/session-stream';

/** What each end of a session's streams means to a person. */
const END_WORDS: Readonly<Record<StreamEndReason, string>> = {
  closed: 'the session was closed',
  expired: 'the session expired (its TTL ran out)',
  token_expired: `the ${STREAM_END.token_expired.text}`,
  device_deleted: `the ${STREAM_END.device_deleted.text}`,
  idle: `the ${STREAM_END.idle.text}`,
  server_shutdown: 'the server is shutting down',
  agent_stopping: "the device's agent stopped",
};

/** The end reason whose close code and text these are, if any. */
function endReasonOf(code: number, reason: string): StreamEndReason | undefined {
  const reasons = Object.keys(STREAM_END) as StreamEndReason[];
  return reasons.find((r) => STREAM_END[r].code === code && STREAM_END[r].text === reason);
}

/** The words for a close code whatever its reason. */
function explainCode(code: number, reason: string): string {
  switch (code) {
    case STREAM_CLOSE.sessionClosed:
      // A reason the server adds after the prefix says why ("session closed: …").
      return reason.startsWith(`${STREAM_END.closed.text}: `) ? `the ${reason}` : END_WORDS.closed;
    case STREAM_CLOSE.sessionExpired:
      return END_WORDS.expired;
    case STREAM_CLOSE.unknownSession:
      return 'the server does not know this session or refused its ticket';
    case STREAM_CLOSE.busy:
      return 'another client is connected to this session';
    case STREAM_CLOSE.protocolViolation:
      return `the other end broke the session's protocol${reason ? ` (${reason})` : ''}`;
    case STREAM_CLOSE.noCredentials:
      return reason === TOKEN_END_TEXT.expired || reason === TOKEN_END_TEXT.revoked
        ? `your ${reason}; log in again (tether login)`
        : 'the server wants a ticket or a token for this stream';
    case STREAM_CLOSE.deviceTimeout:
      return `the device did not answer within ${DEVICE_JOIN_TIMEOUT_MS / 1000} s`;
    case STREAM_CLOSE.serverShutdown:
      return END_WORDS.server_shutdown;
    case 1006:
      return 'the connection was cut: the server, or the device behind it, went away in the middle of a message';
    default:
      return reason || `the connection closed (code ${code})`;
  }
}

/**
 * Whether the stream closed because the server is shutting down: the server closed every open
 * session as it stopped, so there is nothing left for the client to close (and no server to ask).
 */
export function serverShutDown(code: number, reason: string): boolean {
  return code === STREAM_CLOSE.serverShutdown && endReasonOf(code, reason) !== 'agent_stopping';
}

/** What a stream's close code and reason mean to a person. */
export function explainClose(code: number, reason: string): string {
  const end = endReasonOf(code, reason);
  return end ? END_WORDS[end] : explainCode(code, reason);
}
