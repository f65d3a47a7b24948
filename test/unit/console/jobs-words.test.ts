/** The console's jobs pages in words: counts, targets, what runs, and the new-job form's target field. */
import { describe, expect, it } from 'vitest';
import { countsText, endedOf, parseTarget, specText, targetText, totalOf } from '../../../console/src/pages/jobs/words';

const none = { queued: 0, in_progress: 0, succeeded: 0, failed: 0, timed_out: 0, canceled: 0 };

describe('the jobs pages', () => {
  it('say the counts that are not zero, ended first', () => {
    const c = { ...none, succeeded: 3, failed: 1, in_progress: 2, queued: 4 };
    expect(totalOf(c)).toBe(10);
    expect(endedOf(c)).toBe(4);
    expect(countsText(c)).toBe('4 of 10 ended: 3 succeeded, 1 failed · 2 running, 4 queued');
    expect(countsText({ ...none, queued: 3 })).toBe('0 of 3 ended · 3 queued');
    expect(countsText({ ...none, timed_out: 1, canceled: 2 })).toBe('3 of 3 ended: 1 timed out, 2 canceled');
  });

  it('name the target and what runs', () => {
    expect(targetText({ device_ids: ['a'] })).toBe('device a');
    expect(targetText({ device_ids: Array.from({ length: 12 }, (_, i) => `d${i}`) })).toBe('devices d0, d1, d2, d3, d4, d5, d6, d7, d8, d9 and 2 more');
    expect(targetText({ group_id: 'grp_1', tenant: 'acme' })).toBe('the vehicles of fleet group grp_1 (tenant acme)');
    expect(targetText({ labels: { fleet: 'north', role: 'van' } })).toBe('devices labelled fleet=north, role=van');
    // Arguments read as a shell would need them, though none runs them through one.
    expect(specText({ kind: 'command', spec: { argv: ['sh', '-c', "echo 'hi' there"], timeout_seconds: 300 } })).toBe(`sh -c 'echo '\\''hi'\\'' there'`);
    expect(specText({ kind: 'diagnostics', spec: { op: 'log.tail', params: { lines: 5 } } })).toBe('log.tail {"lines":5}');
    expect(specText({ kind: 'diagnostics', spec: { op: 'system.info' } })).toBe('system.info');
    expect(specText({ kind: 'file-push', spec: { path: 'etc/app.conf', mode: '0600' } })).toBe('etc/app.conf (mode 0600)');
  });

  it('take device ids or labels in the new-job form, not both', () => {
    expect(parseTarget(' van-1, van-2 van-1 ')).toEqual({ device_ids: ['van-1', 'van-2'] });
    expect(parseTarget('fleet=north role=van=x')).toEqual({ labels: { fleet: 'north', role: 'van=x' } });
    expect(() => parseTarget('van-1 fleet=north')).toThrow('not both');
    expect(() => parseTarget('  ')).toThrow('at least one');
  });
});
