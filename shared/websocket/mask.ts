/**
 * @module How our WebSocket clients (the agent, the CLI) mask their frames.
 *
 * RFC 6455 masks client frames so that script in a browser cannot choose the bytes an
 * intercepting HTTP proxy sees on the wire (§10.3, cache poisoning). Masking costs a pass over
 * every byte on the sender and another on the receiver, plus a copy of each frame in ws: about a
 * fifth of the CPU of a file transfer. Where no intermediary can read the bytes, it protects
 * nothing: over TLS (`wss:`) proxies see only ciphertext, and on the loopback interface there is
 * no intermediary at all. There we send an all-zero mask, which ws leaves out of the XOR on both
 * ends (the frames stay valid: the mask bit is set, XOR with zero is the identity). Plain `ws:`
 * to any other host keeps random masks.
 *
 * Session streams do not go through ws on our side (`shared/websocket/client.ts`) but follow the same rule.
 *
 * So ws's native masking helper (bufferutil) has almost nothing left to do: the relay sends
 * unmasked frames and our clients mask with zeros. tether does not install it; loading it cost
 * every process 3 MiB of memory (issue 14, agent idle memory).
 */
import { isIP } from 'node:net';

const zeroMask = (mask: Buffer): void => {
  mask.fill(0);
};

function isLoopback(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '');
  if (host === 'localhost' || host === '::1') return true;
  return isIP(host) === 4 && host.startsWith('127.');
}

/** Whether frames sent to `url` may carry an all-zero mask: over TLS or on the loopback interface. */
export function zeroMaskFor(url: string): boolean {
  const parsed = new URL(url);
  return parsed.protocol === 'wss:' || isLoopback(parsed.hostname);
}

/** ws client options for `url`: an all-zero mask where masking protects nothing. */
export function maskingFor(url: string): { generateMask?: (mask: Buffer) => void } {
  return zeroMaskFor(url) ? { generateMask: zeroMask } : {};
}
