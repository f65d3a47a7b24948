/**
 * @module What `tether cp` is measured against (bench/transfer.ts): the same bytes through bare
 * WebSocket processes (a three-process relay, the limit of a relay written in Node, and a
 * two-process single hop) and through the relay's splice alone, with no CLI or agent around it.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { AgentStatusView, DeviceCreated } from '../shared/api/devices';
import type { Session } from '../shared/api/sessions';
import { helper, type Listening, type Transferred } from './helpers';
import { call, processStats, type Data, type ServerProcess } from './lib';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

/** A three-process relay (source, relay, sink) of the same bytes: MiB/s and the relay's CPU seconds per GiB. */
export async function bareRelay(bytes: number) {
  const relay = helper(['relay']);
  const { port } = await relay.next<Listening>();
  const url = `ws://127.0.0.1:${port}`;
  const sink = helper(['sink', url, String(bytes)]);
  await sink.next();
  const cpuBefore = processStats(relay.child.pid!).cpuSeconds;
  // Zero masks, as tether's own clients use on loopback (shared/websocket/mask.ts): the limit, not a handicap.
  const source = helper(['source', url, String(bytes), 'zero-mask']);
  const { seconds } = await sink.next<Transferred>();
  const cpuSeconds = processStats(relay.child.pid!).cpuSeconds - cpuBefore;
  await Promise.all([source.stop(), sink.stop(), relay.stop()]);
  return { rate: bytes / MiB / seconds, cpu: cpuSeconds / (bytes / GiB) };
}

/**
 * The same bytes over one WebSocket from a client process to a server process, in the relay's
 * frames and masked as the agent and the CLI mask theirs: the limit of a single hop.
 */
export async function singleHop(bytes: number) {
  const sink = helper(['listen-sink', String(bytes)]);
  const { port } = await sink.next<Listening>();
  const source = helper(['source', `ws://127.0.0.1:${port}`, String(bytes), 'zero-mask']);
  const { seconds } = await sink.next<Transferred>();
  await Promise.all([source.stop(), sink.stop()]);
  return { rate: bytes / MiB / seconds };
}

let splices = 0;

/** The relay's splice alone: a minimal agent streams the bytes to a sink joined as a client. */
export async function relaySplice(server: ServerProcess, bytes: number) {
  const deviceId = `bench-splice-${++splices}`;
  const created = await call<Data<DeviceCreated>>(`${server.url}/v1/devices`, 'POST', server.token, { device_id: deviceId });
  const agent = helper(['stream-agent', server.url, deviceId, created.body.data.agent_token, String(bytes)]);
  await agent.next();
  for (;;) {
    const s = await call<Data<AgentStatusView>>(`${server.url}/v1/devices/${deviceId}/agent-status`, 'GET', server.token);
    if (s.body.data.agent_status === 'online') break;
    await sleep(20);
  }
  const session = await call<Data<Session>>(`${server.url}/v1/remote-access/sessions`, 'POST', server.token, {
    device_id: deviceId,
    protocol: 'file-transfer',
  });
  const sink = helper(['sink', session.body.data.websocket_url!, String(bytes)]);
  await sink.next(); // open
  const { seconds } = await sink.next<Transferred>();
  await Promise.all([sink.stop(), agent.stop()]);
  await call(`${server.url}/v1/remote-access/sessions/${session.body.data.session_id}`, 'DELETE', server.token);
  return { rate: bytes / MiB / seconds };
}
