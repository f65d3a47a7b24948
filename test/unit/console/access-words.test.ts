/** The console's access pages in words: durations, countdowns, labels, matching policies, live grants, the prefilled form's link. */
import { describe, expect, it } from 'vitest';
import type { AccessPolicy, AccessRequest } from '../../../shared/api/access';
import {
  countdownText,
  durationText,
  isLive,
  labelsText,
  matchingPolicies,
  parseLabels,
  pendingFirst,
  protocolList,
  requestLink,
} from '../../../console/src/pages/access/words';

const policy = (labels: Record<string, string>): AccessPolicy => ({
  policy_id: `apol_${Object.keys(labels).join('')}`,
  name: 'p',
  match: { labels },
  protocols: ['shell'],
  max_duration_seconds: 3600,
  created_by: 'ann',
  created_at: '2026-11-26T10:00:00.000Z',
});

const request = (status: AccessRequest['status'], created_at: string, window?: [string, string]): AccessRequest => ({
  request_id: `areq_${created_at}`,
  status,
  requester: 'bob',
  device_id: 'cam-7',
  protocols: ['shell'],
  reason: 'why',
  duration_seconds: 3600,
  created_at,
  expires_at: created_at,
  reviewed_by: null,
  review_reason: null,
  reviewed_at: null,
  starts_at: window?.[0] ?? null,
  ends_at: window?.[1] ?? null,
  revoked_by: null,
  revoke_reason: null,
  revoked_at: null,
});

describe('the access pages', () => {
  it('say durations and what is left of a grant as people do', () => {
    expect([30, 60, 2700, 3600, 5400, 7200, 86_400, 604_800].map(durationText)).toEqual(['30 s', '1 min', '45 min', '1 h', '1 h 30 min', '2 h', '1 d', '7 d']);
    expect([0, 59, 299, 3723, -5].map(countdownText)).toEqual(['0:00', '0:59', '4:59', '1:02:03', '0:00']);
  });

  it('name protocols as a sentence, in the docs’ order', () => {
    expect(protocolList(['file-transfer', 'shell'])).toBe('Shell and file transfer');
    expect(protocolList(['port-forward', 'diagnostics', 'shell'])).toBe('Shell, diagnostics and port forwarding');
    expect(protocolList(['diagnostics'])).toBe('Diagnostics');
  });

  it('read labels as key=value and refuse anything else', () => {
    expect(parseLabels('env=prod site=north')).toEqual({ env: 'prod', site: 'north' });
    expect(parseLabels('env=prod, tier=')).toEqual({ env: 'prod', tier: '' });
    expect(() => parseLabels('  ')).toThrow('at least one label');
    expect(() => parseLabels('env=prod north')).toThrow('“north” is not key=value');
    expect(() => parseLabels('=prod')).toThrow('is not key=value');
    expect(labelsText({ env: 'prod', site: 'north' })).toBe('env=prod, site=north');
  });

  it('match a device when all of a policy’s labels are the device’s', () => {
    const prod = policy({ env: 'prod' });
    const north = policy({ env: 'prod', site: 'north' });
    expect(matchingPolicies([prod, north], { env: 'prod', site: 'south' })).toEqual([prod]);
    expect(matchingPolicies([prod, north], { env: 'prod', site: 'north', x: 'y' })).toEqual([prod, north]);
    expect(matchingPolicies([prod, north], { env: 'dev' })).toEqual([]);
    expect(matchingPolicies([prod], {})).toEqual([]);
  });

  it('count a grant live from its start until its end, approved only', () => {
    const now = Date.parse('2026-11-26T12:00:00.000Z');
    const window: [string, string] = ['2026-11-26T11:30:00.000Z', '2026-11-26T12:30:00.000Z'];
    expect(isLive(request('approved', 'a', window), now)).toBe(true);
    expect(isLive(request('revoked', 'a', window), now)).toBe(false);
    expect(isLive(request('approved', 'a', window), Date.parse(window[1]))).toBe(false); // the end is exclusive
    expect(isLive(request('pending', 'a'), now)).toBe(false);
  });

  it('put pending requests first, newest first, and link to the form prefilled', () => {
    const rows = [request('approved', '2026-11-26T12:00:00Z'), request('pending', '2026-11-26T10:00:00Z'), request('pending', '2026-11-26T11:00:00Z')];
    expect(pendingFirst(rows).map((r) => [r.status, r.created_at])).toEqual([
      ['pending', '2026-11-26T11:00:00Z'],
      ['pending', '2026-11-26T10:00:00Z'],
      ['approved', '2026-11-26T12:00:00Z'],
    ]);
    expect(requestLink('cam 7', ['shell', 'file-transfer'])).toBe('#/access?device=cam+7&protocols=shell%2Cfile-transfer');
    expect(requestLink('cam-7', [])).toBe('#/access?device=cam-7');
  });
});
