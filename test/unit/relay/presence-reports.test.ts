/**
 * The relay's reports of its agents (relay/presence-reports.ts): a device's reports are made in
 * the order they happened even when the sink writes them later and the earlier one takes longer,
 * other devices do not wait, a sink that answers at once is called at once, and a failed report
 * is logged without stopping the next.
 */
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../../shared/log';
import { createPresenceReports } from '../../../relay/presence-reports';

const later = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function logged() {
  const lines: string[] = [];
  return { lines, log: createLogger({ level: 'error', write: (line: string) => void lines.push(line) }) };
}

describe('presence reports', () => {
  it("makes a device's reports one after another, in order, while another device's go at once", async () => {
    const { log } = logged();
    const reports = createPresenceReports(log);
    const written: string[] = [];
    const write = (what: string, ms: number) => async () => {
      await later(ms);
      written.push(what);
    };
    reports.of('dev-1', write('dev-1 online', 40));
    reports.of('dev-1', write('dev-1 offline', 0));
    reports.of('dev-2', write('dev-2 online', 10));
    await reports.settled();
    expect(written).toEqual(['dev-2 online', 'dev-1 online', 'dev-1 offline']);
  });

  it('calls a sink that answers at once at once', () => {
    const reports = createPresenceReports(logged().log);
    const written: string[] = [];
    reports.of('dev-1', () => void written.push('online'));
    reports.seen(() => void written.push('seen'));
    expect(written).toEqual(['online', 'seen']);
  });

  it('logs a report that failed, thrown or rejected, and makes the next one', async () => {
    const { lines, log } = logged();
    const reports = createPresenceReports(log);
    const written: string[] = [];
    reports.of('dev-1', () => Promise.reject(new Error('database away')));
    reports.of('dev-1', async () => void written.push('offline'));
    reports.of('dev-2', () => {
      throw new Error('sink broken');
    });
    reports.seen(() => Promise.reject(new Error('database away')));
    await reports.settled();
    expect(written).toEqual(['offline']);
    expect(lines).toHaveLength(3);
    expect(lines.join('\n')).toMatch(/could not record agent presence[\s\S]*database away/);
    expect(lines.join('\n')).toMatch(/sink broken/);
    expect(lines.join('\n')).toMatch(/could not record agent heartbeats/);
  });
});
