/**
 * @module What `tether cp` is measured against (bench/transfer.ts): the same bytes through one
 * raw TCP relay process between a source and a sink (three processes, as the CLI, the broker and
 * the agent are), the relay in Node (`socket.pipe`, the limit of a relay written in Node) or in C
 * (splice(2), the physical limit; `./relay-chain`); and through the broker's splice alone, with no
 * CLI or agent around it.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { AgentStatusView, DeviceCreated } from '../shared/api/devices';
import type { Session } from '../shared/api/sessions';
import { helper, helperResult, type Listening, type Transferred } from './helpers';
import { call, processStats, type Data, type ServerProcess } from './lib';
import { relayChain, spliceRelayBinary, type RelayChain, type RelayKind } from './relay-chain';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

/** One copy through a raw relay: MiB/s and the relay process's CPU seconds per GiB. */
export interface RelayCopy {
  rate: number;
  cpu: number;
}

export interface RawRelays {
  /** false when the C relay could not be built (no compiler): its rows say skipped. */
  splice: boolean;
  /**
   * `bytes` through one relay of `kind`: `down` as a download (the device-side source writes, the
   * client counts: device → client), `up` as an upload (the client writes, the device-side sink
   * counts and answers the count after the FIN).
   */
  copy(kind: RelayKind, way: 'down' | 'up', bytes: number): Promise<RelayCopy>;
  stop(): Promise<void>;
}

/** A device-side source and sink (helper processes) behind one Node relay and one C relay. */
export async function rawRelays(): Promise<RawRelays> {
  const services = ['tcp-sink', 'tcp-source'].map((mode) => helper([mode]));
  const chains: Partial<Record<RelayKind, RelayChain>> = {};
  const stop = async () => {
    for (const c of Object.values(chains)) await c.stop();
    await Promise.all(services.map((s) => s.stop()));
  };
  try {
    const targets = (await Promise.all(services.map((s) => s.next<Listening>()))).map((m) => m.port);
    chains.node = await relayChain('node', 1, targets);
    if (spliceRelayBinary()) chains.splice = await relayChain('splice', 1, targets);
  } catch (err) {
    await stop();
    throw err;
  }
  const cpuOf = (pids: number[]) => pids.reduce((sum, pid) => sum + processStats(pid).cpuSeconds, 0);
  return {
    splice: chains.splice !== undefined,
    async copy(kind, way, bytes) {
      const chain = chains[kind]!;
      const before = cpuOf(chain.pids);
      const port = way === 'up' ? chain.ports[0]! : chain.ports[1]!;
      const { seconds } = await helperResult<Transferred>([way === 'up' ? 'tcp-up' : 'tcp-down', String(port), String(bytes), '1']);
      return { rate: bytes / MiB / seconds, cpu: (cpuOf(chain.pids) - before) / (bytes / GiB) };
    },
    stop,
  };
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
