/**
 * Migration 4: the token a session was opened with, so revoking that token closes the sessions
 * it opened (their tickets die with them). Sessions opened before this migration have none.
 */
export default `
ALTER TABLE sessions ADD COLUMN token_id TEXT;
CREATE INDEX sessions_open_by_token ON sessions (token_id) WHERE status = 'open';
`;
