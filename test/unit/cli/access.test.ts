/**
 * The client's side of access requests that needs no server of ours: durations as people type
 * and read them, how a decision is said, and a 403 `access_request_required` (whose `details` is
 * an object, not a list of problems) kept with its code and the server's message, against a real
 * HTTP server on port 0.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiFailure, createApiClient } from '../../../cli/api-client';
import { clockTime, decisionText, durationText, parseDuration } from '../../../cli/commands/access-format';
import { CliError } from '../../../cli/errors';
import type { AccessRequest } from '../../../shared/api/access';

describe('durations', () => {
  it.each([
    ['90s', 90],
    ['30m', 1800],
    ['1h', 3600],
    ['2d', 172_800],
    ['600', 600],
  ])('%s is %i seconds', (text, seconds) => {
    expect(parseDuration('--duration', text, 60, 604_800)).toBe(seconds);
  });

  it.each(['59s', '8d', '1w', '1.5h', '', 'h', '-60'])('%j is a usage mistake', (text) => {
    let err: unknown;
    try {
      parseDuration('--duration', text, 60, 604_800);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(CliError);
    expect(err).toMatchObject({ code: 'usage', exitCode: 2 });
  });

  it('reads back in the two largest units', () => {
    expect([45, 90, 3600, 5400, 28_800, 86_400, 86_400 + 7200 + 60].map(durationText)).toEqual(['45s', '1m30s', '1h', '1h30m', '8h', '1d', '1d2h']);
  });
});

describe('a decision, said', () => {
  const base: AccessRequest = {
    request_id: 'areq_1',
    status: 'approved',
    requester: 'ann',
    device_id: 'cam-7',
    protocols: ['shell'],
    reason: 'INC-1',
    duration_seconds: 1800,
    created_at: '2026-11-26T10:00:00.000Z',
    expires_at: '2026-11-27T10:00:00.000Z',
    reviewed_by: 'bob',
    review_reason: 'go\u001b[2J ahead',
    reviewed_at: '2026-11-26T10:05:00.000Z',
    starts_at: '2026-11-26T10:05:00.000Z',
    ends_at: '2026-11-26T10:35:00.000Z',
    revoked_by: null,
    revoke_reason: null,
    revoked_at: null,
  };

  it('approved: by whom, until when (local clock), why, with no terminal escape', () => {
    const until = clockTime(base.ends_at!);
    expect(decisionText(base)).toBe(`approved by bob until ${until} (go?[2J ahead)`);
    expect(clockTime(base.ends_at!, new Date(base.ends_at!))).toMatch(/^\d\d:\d\d$/);
    expect(clockTime(base.ends_at!, new Date('2030-01-01T12:00:00Z'))).toMatch(/^2026-11-26 \d\d:\d\d$/);
  });

  it('denied, expired, canceled', () => {
    expect(decisionText({ ...base, status: 'denied', review_reason: 'not now', starts_at: null, ends_at: null })).toBe('denied by bob: not now');
    expect(decisionText({ ...base, status: 'expired', reviewed_by: null })).toMatch(/^expired: nobody approved or denied it by /);
    expect(decisionText({ ...base, status: 'canceled' })).toBe('canceled');
  });
});

describe('a 403 access_request_required', () => {
  const message = 'the device cam-7 needs an approved access request for shell: tether access request cam-7 --protocol shell --reason "…"';
  const details = {
    device_id: 'cam-7',
    protocol: 'shell',
    policies: [{ policy_id: 'apol_1', name: 'prod', max_duration_seconds: 3600 }],
    request_command: 'x',
  };
  const server = createServer((_req, res) => {
    res.writeHead(403, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: 'access_request_required', message, status: 403, details }));
  });
  beforeAll(() => new Promise<void>((r) => server.listen(0, '127.0.0.1', r)));
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it("keeps its code and the server's message, which names the command that asks", async () => {
    const api = createApiClient({ server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, token: 't', notice: () => {} });
    const err = await api.request('POST', '/v1/remote-access/sessions', {}).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiFailure);
    expect(err).toMatchObject({ code: 'access_request_required', status: 403, message, exitCode: 1 });
  });
});
