/**
 * A hop (`relay/hop.ts`) whose peer pings and never reads: the pongs must not queue. While the
 * socket waits to drain the hop keeps only the latest ping and stops reading the peer; once the
 * peer reads again, the latest ping is answered and reading resumes.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { acceptHop, type Hop } from '../../../relay/hop';
import { floodPings, LAST_PING } from '../../helpers/ping-flood';
import { encodeFrame, OPCODE, rawUpgrade } from '../../helpers/raw-ws';
import { waitFor } from '../../helpers/wait';

const MiB = 1024 * 1024;

let cleanup: Array<() => void> = [];
afterEach(() => {
  for (const fn of cleanup.splice(0)) fn();
});

/** A server whose first upgrade becomes a hop that reads (as once spliced), and a raw client of it. */
async function hopAndClient() {
  const server = createServer();
  cleanup.push(() => server.close());
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const accepted = new Promise<Hop>((resolve) => {
    server.on('upgrade', (req, socket, head) => {
      const hop = acceptHop(req, socket, head, { maxPayload: 4 * MiB, onSocketError: () => {} });
      if (!hop) return;
      cleanup.push(() => hop.terminate());
      hop.resume();
      resolve(hop);
    });
  });
  const peer = await rawUpgrade((server.address() as AddressInfo).port, '/');
  cleanup.push(() => peer.socket.destroy());
  return { hop: await accepted, peer };
}

describe('a hop whose peer pings and never reads', () => {
  it('queues no pongs and stops reading the peer; the latest ping is answered once it reads', async () => {
    const { hop, peer } = await hopAndClient();
    peer.socket.pause(); // never reads
    let mostQueued = 0;
    const sampler = setInterval(() => (mostQueued = Math.max(mostQueued, hop.socket.writableLength)), 5);
    const flooded = await floodPings(peer.socket, { masked: true, bytes: 32 * MiB, stallMs: 1000 });
    clearInterval(sampler);
    mostQueued = Math.max(mostQueued, hop.socket.writableLength);
    // At most the socket's own buffer (16 KiB) and a pong: the kernel holds the rest.
    expect(mostQueued).toBeLessThan(64 * 1024);
    expect(flooded.stalled).toBe(true); // the hop stopped reading: the pings wait at the peer
    expect(hop.isPaused).toBe(true);

    peer.socket.resume();
    await peer.waitForFrame((f) => f.opcode === OPCODE.pong && f.payload.equals(LAST_PING), 'the pong of the last ping');
    const pongs = peer.frames.filter((f) => f.opcode === OPCODE.pong).length;
    expect(pongs).toBeLessThan(flooded.sent / 131); // pings read while the socket was backed up got no pong of their own
    expect(peer.frames.every((f) => f.opcode === OPCODE.pong)).toBe(true);
    // Reading resumed: the hop answers the next ping at once, and is open.
    await peer.writePieces([encodeFrame({ opcode: OPCODE.ping, payload: Buffer.from('again') })]);
    await peer.waitForFrame((f) => f.opcode === OPCODE.pong && f.payload.toString() === 'again', 'the next pong');
    expect(hop.state).toBe('open');
  });

  it('held by its caller, stays held when its own backlog drains', async () => {
    const { hop, peer } = await hopAndClient();
    peer.socket.pause();
    await floodPings(peer.socket, { masked: true, bytes: 32 * MiB, stallMs: 500 });
    hop.pause(); // as the splice does when the other side is backed up
    peer.socket.resume();
    await waitFor(() => hop.socket.writableLength === 0 && peer.frames.length > 0, 'the hop to drain');
    await new Promise((r) => setTimeout(r, 100));
    expect(hop.isPaused).toBe(true);
    expect(peer.frames.some((f) => f.payload.equals(LAST_PING))).toBe(false); // still unread
    hop.resume();
    await peer.waitForFrame((f) => f.opcode === OPCODE.pong && f.payload.equals(LAST_PING), 'the pong of the last ping');
  });
});
