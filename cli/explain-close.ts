/**
 * @module A session stream's close code and reason in plain words for the person at the
 * terminal. The codes and reason texts are the shared ones (docs/session-streams.md, close codes),
 * read as data: a code and reason the server sends has words of its own; a reason this client does
 * not know gets the words of its code.
 */
import { DEVICE_JOIN_TIMEOUT_MS, STREAM_CLOSE, STREAM_END, TOKEN_END_TEXT, type StreamEndReason } from '../shared/protocol/session-stream';

/** What each end of a session's streams means to a person. */
const END_WORDS: Readonly<Record<StreamEndReason, string>> = {
  closed: 'the session was closed',
  expired: 'the session expired (its TTL ran out)',
  token_expired: `the ${STREAM_END.token_expired.text}`,
  device_deleted: `the ${STREAM_END.device_deleted.text}`,
  idle: `the ${STREAM_END.idle.text}`,
  server_shutdown: 'the server is shutting down',
  access_expired: `the ${STREAM_END.access_expired.text} (tether access request asks for more time)`,
  access_revoked: `the ${STREAM_END.access_revoked.text}`,
  agent_stopping: "the device's agent stopped",
};

/** Every close the server sends with a reason of its own: its code, its reason, and its words. */
const KNOWN: ReadonlyArray<{ code: number; text: string; words: string; end?: StreamEndReason }> = [
  ...(Object.keys(STREAM_END) as StreamEndReason[]).map((end) => ({ ...STREAM_END[end], words: END_WORDS[end], end })),
  ...Object.values(TOKEN_END_TEXT).map((text) => ({ code: STREAM_CLOSE.noCredentials, text, words: `your ${text}; log in again (tether login)` })),
];

/** The words of each close code whatever its reason. */
const CODE_WORDS: Readonly<Record<number, (reason: string) => string>> = {
  [STREAM_CLOSE.sessionClosed]: () => END_WORDS.closed,
  [STREAM_CLOSE.sessionExpired]: () => END_WORDS.expired,
  [STREAM_CLOSE.unknownSession]: () => 'the server does not know this session or refused its ticket',
  [STREAM_CLOSE.busy]: () => 'another client is connected to this session',
  [STREAM_CLOSE.protocolViolation]: (reason) => `the other end broke the session's protocol${reason ? ` (${reason})` : ''}`,
  [STREAM_CLOSE.noCredentials]: () => 'the server wants a ticket or a token for this stream',
  [STREAM_CLOSE.deviceTimeout]: () => `the device did not answer within ${DEVICE_JOIN_TIMEOUT_MS / 1000} s`,
  [STREAM_CLOSE.serverShutdown]: () => END_WORDS.server_shutdown,
  1006: () => 'the connection was cut: the server, or the device behind it, went away in the middle of a message',
};

const knownClose = (code: number, reason: string) => KNOWN.find((k) => k.code === code && k.text === reason);

/**
 * Whether the stream closed because the server is shutting down: the server closed every open
 * session as it stopped, so there is nothing left for the client to close (and no server to ask).
 */
export function serverShutDown(code: number, reason: string): boolean {
  return code === STREAM_CLOSE.serverShutdown && knownClose(code, reason)?.end !== 'agent_stopping';
}

/** What a stream's close code and reason mean to a person. */
export function explainClose(code: number, reason: string): string {
  return knownClose(code, reason)?.words ?? CODE_WORDS[code]?.(reason) ?? (reason || `the connection closed (code ${code})`);
}
