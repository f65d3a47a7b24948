/** Client frame masking is skipped only where no intermediary can read the bytes. */
import { describe, expect, it } from 'vitest';
import { maskingFor } from '../../../../shared/websocket/mask';

const maskOf = (url: string): Buffer | undefined => {
  const { generateMask } = maskingFor(url);
  if (!generateMask) return undefined;
  const mask = Buffer.from([1, 2, 3, 4]);
  generateMask(mask);
  return mask;
};

describe('maskingFor', () => {
  it('sends an all-zero mask over TLS and on loopback', () => {
    for (const url of ['wss://relay.example.com/v1/agent/stream', 'ws://127.0.0.1:8080/x', 'ws://127.3.0.9/x', 'ws://localhost:1/x', 'ws://[::1]:9/x']) {
      expect(maskOf(url), url).toEqual(Buffer.alloc(4));
    }
  });

  it('keeps ws random masks on plain ws: to any other host', () => {
    for (const url of ['ws://relay.example.com/v1/agent/stream', 'ws://10.0.0.1/x', 'ws://128.0.0.1/x', 'ws://127.0.0.1.evil.example/x']) {
      expect(maskingFor(url), url).toEqual({});
    }
  });
});
