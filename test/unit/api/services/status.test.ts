import { describe, expect, it } from 'vitest';
import { revisionOf } from '../../../../api/services/spec';
import { deriveStatus, statusMessage, syncStatus } from '../../../../api/services/status';

const report = (ready: number, state: 'progressing' | 'failed' = 'progressing') => ({
  service: 's',
  environment: 'dev' as const,
  rollout: 1,
  ready,
  state,
});

describe('service status from runtime reports', () => {
  it('deploying until every replica is ready, then healthy', () => {
    expect(deriveStatus('deploying', 3, report(2))).toBe('deploying');
    expect(deriveStatus('deploying', 3, report(3))).toBe('healthy');
    expect(deriveStatus('deploying', 0, report(0))).toBe('healthy');
  });
  it('a healthy service that loses replicas is degraded; a failed rollout is failed', () => {
    expect(deriveStatus('healthy', 3, report(1))).toBe('degraded');
    expect(deriveStatus('degraded', 3, report(3))).toBe('healthy');
    expect(deriveStatus('deploying', 3, report(1, 'failed'))).toBe('failed');
  });
  it('a failed rollout stays failed on later reports until every replica is ready', () => {
    expect(deriveStatus('failed', 3, report(2))).toBe('failed');
    expect(deriveStatus('failed', 3, report(3))).toBe('healthy');
  });
  it('only a failed status has a message: the runtime’s, else what was kept, else how far it got', () => {
    const failed = { ...report(1, 'failed'), message: '  exited with code 1\n' };
    expect(statusMessage('failed', failed, 3, null)).toBe('exited with code 1');
    expect(statusMessage('failed', report(1, 'failed'), 3, 'kept')).toBe('kept');
    expect(statusMessage('failed', report(1, 'failed'), 3, null)).toBe('the runtime gave up on the rollout with 1 of 3 replicas ready');
    expect(statusMessage('healthy', failed, 3, 'kept')).toBeNull();
  });
  it('sync follows readiness of the last applied spec', () => {
    expect([syncStatus(3, 2), syncStatus(3, 3)]).toEqual(['OutOfSync', 'Synced']);
  });
  it('a revision is the image tag with a leading v', () => {
    expect(revisionOf('registry.example.com/platform/web:1.4.2')).toBe('v1.4.2');
    expect(revisionOf('registry.example.com:5000/platform/web:v2.0.0')).toBe('v2.0.0');
  });
});
