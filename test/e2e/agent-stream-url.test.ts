/**
 * Where a real agent process dials a data stream (docs/cluster.md, security): a broker it connects
 * to (a stand-in here: a node that only relays, as a compromised one would) asks it to dial
 * somewhere else. The agent dials only its own servers, or a URL the control node signed for it,
 * and never shows its token there: only a proof bound to that one stream.
 */
import type { IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentKey, streamOpenSignature, streamProof } from '../../shared/auth/agent-proofs';
import { AGENT_HEADERS } from '../../shared/protocol/control-channel';
import { AGENT_SUBPROTOCOL, TETHER_VERSION } from '../../shared/version';
import { startProcess, type Proc } from '../helpers/processes';
import { tempDir } from '../helpers/stack';
import { waitFor } from '../helpers/wait';

const TOKEN = 'tdev_agent-stream-url-test-token-0123456789abcdef';
const DEVICE = 'url-dev';

interface Listener {
  url: string;
  upgrades: IncomingMessage[];
  sockets: WebSocket[];
  close(): Promise<void>;
}

async function listener(): Promise<Listener> {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, handleProtocols: () => AGENT_SUBPROTOCOL });
  await new Promise<void>((resolve) => wss.once('listening', resolve));
  const upgrades: IncomingMessage[] = [];
  const sockets: WebSocket[] = [];
  wss.on('connection', (ws, req) => {
    upgrades.push(req);
    sockets.push(ws);
    ws.on('error', () => {});
  });
  return {
    url: `http://127.0.0.1:${(wss.address() as AddressInfo).port}`,
    upgrades,
    sockets,
    close: () =>
      new Promise<void>((resolve) => {
        for (const ws of wss.clients) ws.terminate();
        wss.close(() => resolve());
      }),
  };
}

let broker: Listener;
let second: Listener;
let elsewhere: Listener;
let agent: Proc;
/** What the agent told the relay (stream refusals). */
const fromAgent: Array<{ type: string; stream_id?: string; message?: string }> = [];

const streamOpen = (streamId: string, url: string, sig?: string) => ({
  type: 'stream.open',
  session_id: 'sess-aaaaaaaaaaaaaaaaaaaa',
  stream_id: streamId,
  protocol: 'diagnostics',
  expires_at: new Date(Date.now() + 600_000).toISOString(),
  url,
  ...(sig !== undefined && { sig }),
});

function send(msg: object): void {
  broker.sockets.at(-1)!.send(JSON.stringify(msg));
}

beforeAll(async () => {
  [broker, second, elsewhere] = await Promise.all([listener(), listener(), listener()]);
  agent = startProcess(['agent', '--server', broker.url, '--server', second.url, '--device-id', DEVICE, '--no-warm-shell'], {
    TETHER_DEVICE_TOKEN: TOKEN,
    TETHER_FILES_ROOT: tempDir('tether-url-root-'),
  });
  await waitFor(() => broker.sockets[0], 'the agent on its first server', 15_000);
  broker.sockets[0]!.on('message', (data) => fromAgent.push(JSON.parse(data.toString())));
  send({ type: 'welcome', device_id: DEVICE, heartbeat_ms: 60_000, server_version: TETHER_VERSION });
}, 30_000);

afterAll(async () => {
  await agent?.stop();
  await Promise.all([broker, second, elsewhere].map((l) => l?.close()));
});

describe('the agent asked to dial a stream somewhere else', () => {
  it('refuses a URL that is not one of its servers when the request is not signed, and dials nothing', async () => {
    send(streamOpen('streamnosig', elsewhere.url));
    const refusal = await waitFor(() => fromAgent.find((m) => m.stream_id === 'streamnosig'), 'the refusal', 10_000);
    expect(refusal).toMatchObject({ type: 'stream.refused', message: expect.stringContaining('not signed by the control node') });
    expect(elsewhere.upgrades).toHaveLength(0);
  });

  it("refuses one whose signature is not the control node's (made with another key, or for another URL)", async () => {
    const forged = streamOpenSignature(agentKey('tdev_some-other-token'), { device_id: DEVICE, ...streamOpen('streamforged', elsewhere.url) });
    send(streamOpen('streamforged', elsewhere.url, forged));
    const other = streamOpenSignature(agentKey(TOKEN), { device_id: DEVICE, ...streamOpen('streamother', second.url) });
    send(streamOpen('streamother', elsewhere.url, other)); // signed for the second server, sent elsewhere
    await waitFor(
      () => (fromAgent.some((m) => m.stream_id === 'streamforged') && fromAgent.some((m) => m.stream_id === 'streamother') ? true : undefined),
      'both refusals',
      10_000,
    );
    expect(elsewhere.upgrades).toHaveLength(0);
  });

  it('dials a URL the control node signed, showing a proof for that stream and never its token', async () => {
    const msg = streamOpen('streamsigned', elsewhere.url);
    send({ ...msg, sig: streamOpenSignature(agentKey(TOKEN), { device_id: DEVICE, ...msg }) });
    const req = await waitFor(() => elsewhere.upgrades[0], 'the agent dialling the signed URL', 10_000);
    expect(req.headers[AGENT_HEADERS.streamProof]).toBe(streamProof(agentKey(TOKEN), 'streamsigned'));
    expect(req.headers[AGENT_HEADERS.streamId]).toBe('streamsigned');
    expect(req.headers.authorization).toBeUndefined();
    expect(JSON.stringify(req.headers)).not.toContain(TOKEN);
  });

  it('dials its own second server without a signature: the operator named it', async () => {
    send(streamOpen('streamown', second.url));
    const req = await waitFor(
      () => second.upgrades.find((r) => r.headers[AGENT_HEADERS.streamId] === 'streamown'),
      'the agent dialling its own server',
      10_000,
    );
    expect(req.headers.authorization).toBeUndefined();
  });
});
