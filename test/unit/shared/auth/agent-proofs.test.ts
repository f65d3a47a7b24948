import { describe, expect, it } from 'vitest';
import { agentKey, nodeAgentProof, proofMatches, streamOpenSignature, streamProof } from '../../../../shared/auth/agent-proofs';
import { sha256Hex } from '../../../../shared/ids';

const key = agentKey('tdev_token');
const open = {
  device_id: 'd1',
  session_id: 'sess-aaaaaaaaaaaaaaaaaaaa',
  stream_id: 'abcdefghijklmnopqrstuvwxyz',
  protocol: 'shell',
  expires_at: '2026-01-01T00:00:00.000Z',
  url: 'http://127.0.0.1:8081',
};

describe('agent proofs', () => {
  it('are keyed by the SHA-256 of the token, which is what the database stores', () => {
    expect(key).toBe(sha256Hex('tdev_token'));
  });

  it('bind a node proof to its node and device, and a stream proof to its stream', () => {
    const p = nodeAgentProof(key, 'edge-a', 'd1');
    expect(proofMatches(p, nodeAgentProof(key, 'edge-a', 'd1'))).toBe(true);
    expect(proofMatches(p, nodeAgentProof(key, 'edge-b', 'd1'))).toBe(false);
    expect(proofMatches(p, nodeAgentProof(key, 'edge-a', 'd2'))).toBe(false);
    expect(proofMatches(p, nodeAgentProof(agentKey('tdev_other'), 'edge-a', 'd1'))).toBe(false);
    expect(streamProof(key, 's1')).not.toBe(streamProof(key, 's2'));
    expect(p).not.toContain('tdev_token');
  });

  it('sign every field of a stream.open: changing any one breaks the signature', () => {
    const sig = streamOpenSignature(key, open);
    expect(streamOpenSignature(key, { ...open })).toBe(sig);
    for (const change of [
      { url: 'http://evil:1' },
      { device_id: 'd2' },
      { session_id: 'sess-b' },
      { stream_id: 'x' },
      { protocol: 'diagnostics' },
      { expires_at: '2030-01-01T00:00:00.000Z' },
      { targets: ['127.0.0.1:22'] },
    ]) {
      expect(streamOpenSignature(key, { ...open, ...change }), JSON.stringify(change)).not.toBe(sig);
    }
  });
});
