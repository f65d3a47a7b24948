/**
 * The CLI's answer to a 409 on opening a session (cli/sessions.ts), against a stub API on port 0:
 * whose session is in the way comes from the body's `holder` (never the message's words), `--replace`
 * is offered, and done, only for the caller's own session, and someone else's is never closed.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createApiClient, type ApiClient } from '../../../cli/api-client';
import { CliError } from '../../../cli/errors';
import { openSession } from '../../../cli/sessions';

const OPENED_AT = '2026-11-24T16:50:02.113Z';
/** What the stub answers: who the caller is, who holds the device's shell, which sessions the caller sees. */
let me: { username: string; role: string };
let holder: string | undefined;
let visible: Array<{ session_id: string; opened_by: string }>;
let calls: string[];

function json(res: ServerResponse, status: number, body: unknown) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

const server = createServer((req: IncomingMessage, res: ServerResponse) => {
  calls.push(`${req.method} ${req.url}`);
  req.resume();
  if (req.url === '/v1/me') return json(res, 200, { status: 200, data: { username: me.username, role: me.role } });
  if (req.method === 'GET' && req.url?.startsWith('/v1/remote-access/sessions?')) return json(res, 200, { status: 200, data: visible });
  if (req.method === 'DELETE') {
    holder = undefined;
    return json(res, 200, { status: 200, data: {} });
  }
  if (req.method === 'POST' && holder === undefined) return json(res, 201, { status: 201, data: { session_id: 'sess-new' } });
  // The message's words are deliberately misleading: the client must read `holder`.
  return json(res, 409, {
    error: 'conflict',
    message: `${me.username} opened it; run with --replace`,
    status: 409,
    holder: { opened_by: holder, opened_at: OPENED_AT },
  });
});
let api: ApiClient;

beforeAll(async () => {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  api = createApiClient({ server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, token: 'tth_t', notice: () => {} });
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));
beforeEach(() => {
  calls = [];
  visible = [];
});

const notices: string[] = [];
const open = (replace: boolean) => openSession(api, { device: 'dev-1', protocol: 'shell', replace, notice: (l) => notices.push(l) });

async function refusal(replace: boolean): Promise<CliError> {
  const err = await open(replace).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(CliError);
  return err as CliError;
}

describe('a 409 on opening a session', () => {
  it("someone else's: names who holds it and since when, offers no --replace, closes nothing", async () => {
    me = { username: 'ann', role: 'developer' };
    holder = 'bob';
    const err = await refusal(false);
    expect(err.code).toBe('conflict');
    expect(err.message).toContain(`bob holds it (opened at ${OPENED_AT})`);
    expect(err.message).not.toContain('--replace');
    const withReplace = await refusal(true);
    expect(withReplace.message).toContain('--replace closes only your own sessions');
    expect(calls.some((c) => c.startsWith('DELETE'))).toBe(false);
    expect(holder).toBe('bob');
  });

  it("someone else's, for an administrator: shows the close command, and --replace still closes nothing", async () => {
    me = { username: 'ann', role: 'administrator' };
    holder = 'bob';
    visible = [{ session_id: 'sess-bob', opened_by: 'bob' }];
    const err = await refusal(true);
    expect(err.message).toContain('bob holds it');
    expect(err.message).toContain('tether session close sess-bob');
    expect(calls.some((c) => c.startsWith('DELETE'))).toBe(false);
  });

  it('your own: names it and offers --replace; --replace closes only yours and opens again', async () => {
    me = { username: 'ann', role: 'administrator' };
    holder = 'ann';
    visible = [
      { session_id: 'sess-mine', opened_by: 'ann' },
      { session_id: 'sess-other-device-user', opened_by: 'bob' },
    ];
    const err = await refusal(false);
    expect(err.message).toContain(`yours (sess-mine), opened at ${OPENED_AT}`);
    expect(err.message).toContain('Run again with --replace');
    const opened = await open(true);
    expect(opened.session_id).toBe('sess-new');
    expect(calls.filter((c) => c.startsWith('DELETE'))).toEqual(['DELETE /v1/remote-access/sessions/sess-mine']);
    expect(notices).toContain('closing session sess-mine (--replace)');
  });
});
