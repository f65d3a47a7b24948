import { describe, expect, it } from 'vitest';
import { explainClose, serverShutDown } from '../../../cli/explain-close';
import { STREAM_CLOSE, STREAM_END, TOKEN_END_TEXT } from '../../../shared/protocol/session-stream';

describe('explainClose', () => {
  it("tells the device's agent stopping from the server shutting down (both close 1001)", () => {
    const agent = STREAM_END.agent_stopping;
    const server = STREAM_END.server_shutdown;
    expect(agent.code).toBe(server.code);
    expect(explainClose(agent.code, agent.text)).toBe("the device's agent stopped");
    expect(explainClose(server.code, server.text)).toBe('the server is shutting down');
    expect(explainClose(STREAM_CLOSE.serverShutdown, '')).toBe('the server is shutting down');
  });

  it('knows when the server closed the session as it stopped, and when only the agent stopped', () => {
    expect(serverShutDown(STREAM_END.server_shutdown.code, STREAM_END.server_shutdown.text)).toBe(true);
    expect(serverShutDown(STREAM_CLOSE.serverShutdown, '')).toBe(true);
    expect(serverShutDown(STREAM_END.agent_stopping.code, STREAM_END.agent_stopping.text)).toBe(false);
    expect(serverShutDown(STREAM_END.closed.code, STREAM_END.closed.text)).toBe(false);
  });

  it("has words for every way a session's streams end, each its own", () => {
    const words = Object.values(STREAM_END).map(({ code, text }) => explainClose(code, text));
    expect(new Set(words).size).toBe(words.length);
    for (const w of words) expect(w).not.toMatch(/code \d+/);
  });

  it('says why a session was closed when its reason is one the server sends, and gives a reason it does not know the words of its code', () => {
    expect(explainClose(STREAM_END.closed.code, STREAM_END.closed.text)).toBe('the session was closed');
    expect(explainClose(STREAM_END.token_expired.code, STREAM_END.token_expired.text)).toBe('the session closed: the token that opened it expired');
    expect(explainClose(STREAM_END.idle.code, STREAM_END.idle.text)).toBe(`the ${STREAM_END.idle.text}`);
    // Read as data, never as words: a reason only looking like a known one is its code's.
    expect(explainClose(STREAM_CLOSE.sessionClosed, 'session closed: a reason added later')).toBe('the session was closed');
    expect(explainClose(STREAM_CLOSE.sessionClosed, 'something else')).toBe('the session was closed');
  });

  it('tells an expired or revoked bearer token from a missing credential', () => {
    expect(explainClose(STREAM_CLOSE.noCredentials, TOKEN_END_TEXT.expired)).toBe('your token expired; log in again (tether login)');
    expect(explainClose(STREAM_CLOSE.noCredentials, TOKEN_END_TEXT.revoked)).toBe('your token revoked; log in again (tether login)');
    expect(explainClose(STREAM_CLOSE.noCredentials, 'missing ticket')).toBe('the server wants a ticket or a token for this stream');
  });

  it('explains the other codes, and falls back to the reason or the code', () => {
    expect(explainClose(STREAM_CLOSE.sessionExpired, 'session expired')).toBe('the session expired (its TTL ran out)');
    expect(explainClose(STREAM_CLOSE.unknownSession, '')).toBe('the server does not know this session or refused its ticket');
    expect(explainClose(STREAM_CLOSE.busy, '')).toBe('another client is connected to this session');
    expect(explainClose(STREAM_CLOSE.deviceTimeout, '')).toBe('the device did not answer within 10 s');
    expect(explainClose(STREAM_CLOSE.internalError, 'too many sessions')).toBe('too many sessions');
    expect(explainClose(1006, '')).toBe('the connection was cut: the server, or the device behind it, went away in the middle of a message');
    expect(explainClose(1002, '')).toBe('the connection closed (code 1002)');
  });
});
