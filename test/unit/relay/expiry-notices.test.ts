/**
 * A notice on a client's hop (`relay/hop.ts` sendText, `relay/expiry-notices.ts`): written at
 * once when nothing is being forwarded, and never inside a frame the device is sending: it waits
 * for that frame's end. The device's side never sees it.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createExpiryNotices } from '../../../relay/expiry-notices';
import { acceptHop, type Hop } from '../../../relay/hop';
import { splice } from '../../../relay/splice';
import { createLogger } from '../../../shared/log';
import { encodeFrame, OPCODE, rawUpgrade, serverFrameFaults } from '../../helpers/raw-ws';
import { waitFor } from '../../helpers/wait';

let cleanup: Array<() => void> = [];
afterEach(() => {
  for (const fn of cleanup.splice(0)) fn();
});

/** A client and a device connected to a server whose two hops are spliced once both came. */
async function clientAndDevice() {
  const server = createServer();
  cleanup.push(() => server.close());
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const hops: Hop[] = [];
  server.on('upgrade', (req, socket, head) => {
    const hop = acceptHop(req, socket, head, { maxPayload: 1024 * 1024, onSocketError: () => {} });
    if (!hop) return;
    cleanup.push(() => hop.terminate());
    hops.push(hop);
    if (hops.length === 2) splice(hops[0]!, hops[1]!, { highWaterMark: 1024 * 1024, onBytes: () => {}, onEnd: () => ({ code: 1000, reason: '' }) });
  });
  const port = (server.address() as AddressInfo).port;
  const client = await rawUpgrade(port, '/');
  await waitFor(() => hops.length === 1, 'the client hop');
  const clientHop = hops[0]!;
  const device = await rawUpgrade(port, '/');
  await waitFor(() => hops.length === 2, 'the device hop');
  cleanup.push(() => {
    client.socket.destroy();
    device.socket.destroy();
  });
  return { client, device, clientHop, deviceHop: hops[1]! };
}

const silent = createLogger({ level: 'error', write: () => {} });

describe('notices on a client hop', () => {
  it('wait for the end of the frame the device is sending, then arrive whole; the device gets none', async () => {
    const { client, device, clientHop, deviceHop } = await clientAndDevice();
    const payload = Buffer.alloc(64 * 1024, 7);
    const frame = encodeFrame({ opcode: OPCODE.binary, payload });
    // Half of a frame from the device: the relay has passed its header and part of its payload on.
    await device.writePieces([frame.subarray(0, 32 * 1024)]);
    await waitFor(() => deviceHop.readingMidFrame, 'the first half passed on');
    clientHop.sendText('{"type":"notice"}');
    await device.writePieces([frame.subarray(32 * 1024)]);
    await client.waitForFrame((f) => f.opcode === OPCODE.text, 'the notice');
    expect(client.frames.length).toBe(2);
    expect(client.frames.map((f) => [f.opcode, f.payload.length])).toEqual([
      [OPCODE.binary, payload.length],
      [OPCODE.text, 17],
    ]);
    expect(serverFrameFaults(client.frames)).toEqual([]);
    expect(device.frames).toEqual([]);
  });

  it('warn a shell stream before its end; a port-forward stream never', async () => {
    const { client, clientHop } = await clientAndDevice();
    const notices = createExpiryNotices({ offsetsS: [2], now: Date.now, log: silent });
    cleanup.push(() => notices.close());
    const expiresAt = new Date(Date.now() + 2_300).toISOString();
    notices.watch({ client: clientHop, grant: { sessionId: 'sess-pf', protocol: 'port-forward', expiresAt } });
    expect(notices.armed()).toBe(false);
    notices.watch({ client: clientHop, grant: { sessionId: 'sess-sh', protocol: 'shell', expiresAt } });
    const frame = await client.waitForFrame((f) => f.opcode === OPCODE.text, 'the notice', 5_000);
    expect(JSON.parse(frame.payload.toString())).toMatchObject({ type: 'notice', code: 'session_expiring', expires_at: expiresAt, seconds_left: 2 });
    expect(notices.armed()).toBe(false);
  });
});
