/**
 * Our WebSocket client (`shared/websocket/client.ts`: the agent's control channel and data streams, the
 * CLI's streams) against a hostile server that pings and never reads: the pongs must not queue.
 * While the socket waits to drain the client keeps only the latest ping and stops reading; once
 * the server reads again, the latest ping is answered and reading resumes.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { connectWsClient, type WsClient } from '../../../../shared/websocket/client';
import { floodPings, LAST_PING } from '../../../helpers/ping-flood';
import { encodeFrame, OPCODE, startFakeWsServer, type FakeUpgrade } from '../../../helpers/raw-ws';
import { waitFor } from '../../../helpers/wait';

const MiB = 1024 * 1024;

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function connected(): Promise<{ socket: WsClient; upgrade: FakeUpgrade; pings: () => number }> {
  const server = await startFakeWsServer((u) => u.accept());
  cleanups.push(() => server.close());
  const socket = await connectWsClient(`ws://127.0.0.1:${server.port}/`, { maxPayload: MiB });
  cleanups.push(() => socket.terminate());
  let pings = 0;
  socket.on('ping', () => pings++);
  const upgrade = await waitFor(() => server.upgrades[0], 'the upgrade');
  return { socket, upgrade, pings: () => pings };
}

describe('a server that pings and never reads', () => {
  it('makes the client queue no pongs and stop reading; the latest ping is answered once it reads', async () => {
    const { socket, upgrade, pings } = await connected();
    upgrade.socket.pause(); // never reads
    let mostQueued = 0;
    const sampler = setInterval(() => (mostQueued = Math.max(mostQueued, socket.bufferedAmount)), 5);
    const flooded = await floodPings(upgrade.socket, { masked: false, bytes: 32 * MiB, stallMs: 1000 });
    clearInterval(sampler);
    mostQueued = Math.max(mostQueued, socket.bufferedAmount);
    expect(mostQueued).toBeLessThan(64 * 1024); // the socket's own buffer and a pong; the kernel holds the rest
    expect(flooded.stalled).toBe(true); // the client stopped reading: the pings wait at the server
    expect(pings()).toBeGreaterThan(0);

    upgrade.socket.resume();
    await waitFor(() => upgrade.frames.find((f) => f.opcode === OPCODE.pong && f.payload.equals(LAST_PING)), 'the pong of the last ping');
    expect(upgrade.frames.every((f) => f.opcode === OPCODE.pong && f.masked)).toBe(true);
    expect(upgrade.frames.length).toBeLessThan(pings()); // pings read while backed up got no pong of their own
    // Reading resumed: text still arrives, and the next ping is answered at once.
    const text = new Promise<string>((resolve) => socket.once('text', resolve));
    upgrade.socket.write(encodeFrame({ opcode: OPCODE.text, masked: false, payload: Buffer.from('still here') }));
    expect(await text).toBe('still here');
    upgrade.socket.write(encodeFrame({ opcode: OPCODE.ping, masked: false, payload: Buffer.from('again') }));
    await waitFor(() => upgrade.frames.find((f) => f.opcode === OPCODE.pong && f.payload.toString() === 'again'), 'the next pong');
    expect(socket.state).toBe('open');
  });

  it('paused by its caller, stays paused when its own backlog drains', async () => {
    const { socket, upgrade } = await connected();
    upgrade.socket.pause();
    await floodPings(upgrade.socket, { masked: false, bytes: 32 * MiB, stallMs: 500 });
    socket.pause();
    upgrade.socket.resume();
    await waitFor(() => socket.bufferedAmount === 0 && upgrade.frames.length > 0, 'the client to drain');
    await new Promise((r) => setTimeout(r, 100));
    expect(upgrade.frames.some((f) => f.payload.equals(LAST_PING))).toBe(false); // still unread
    socket.resume();
    await waitFor(() => upgrade.frames.find((f) => f.opcode === OPCODE.pong && f.payload.equals(LAST_PING)), 'the pong of the last ping');
  });
});
