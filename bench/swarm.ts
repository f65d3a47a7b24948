/**
 * @module Helper processes for the benchmarks, so that load does not share the measured
 * process's CPU: `sink URL BYTES` (counts a stream's bytes), `agents URL FILE` (light clients speaking the
 * real agent protocol, jobs included (`./jobs-light-agent`), one per device in FILE, spread over
 * several source addresses), and
 * `stream-agent URL DEVICE TOKEN BYTES` (answers each stream by sending BYTES), and
 * `real-agents URL FILE STATE_DIR [FILES_ROOT]` (real agents, one per device in FILE); and the
 * TCP ends of the port-forward benchmark (`./tcp-helpers`, modes `tcp-…`).
 */
import { readFileSync } from 'node:fs';
import { WebSocket } from 'ws';
import { createAgent } from '../agent/agent';
import { loadAgentConfig } from '../agent/config';
import { createLogger } from '../shared/log';
import { AGENT_CONNECT_PATH, AGENT_STREAM_PATH } from '../shared/protocol/control-channel';
import { AGENT_SUBPROTOCOL } from '../shared/version';
import { maskingFor } from '../shared/websocket/mask';
import { lightJobs, type LightJobs } from './jobs-light-agent';
import { runTcpHelper } from './tcp-helpers';

const CHUNK = 256 * 1024;
const HIGH = 4 * 1024 * 1024;
const SINK_MAX_PAYLOAD = 16 * 1024 * 1024;

function report(msg: object): void {
  process.stdout.write(`${JSON.stringify(msg)}\n`);
}

/** Sends `bytes` as binary frames as fast as the socket takes them. */
function pump(ws: WebSocket, bytes: number, done: () => void): void {
  const chunk = Buffer.alloc(CHUNK, 7);
  let sent = 0;
  const more = () => {
    while (sent < bytes && ws.bufferedAmount < HIGH) {
      const n = Math.min(CHUNK, bytes - sent);
      sent += n;
      ws.send(n === CHUNK ? chunk : chunk.subarray(0, n), { binary: true }, sent >= bytes ? done : undefined);
    }
    if (sent < bytes) setImmediate(more);
  };
  more();
}

/** Counts `bytes` of frames from `ws`, reports the seconds from the first frame to the last, and exits. */
function receive(ws: WebSocket, bytes: number): void {
  let got = 0;
  let started = 0;
  ws.on('message', (data: Buffer) => {
    if (started === 0) started = performance.now();
    got += data.length;
    if (got >= bytes) {
      report({ received: got, seconds: (performance.now() - started) / 1000 });
      ws.close();
      process.exit(0);
    }
  });
}

const [mode, ...args] = process.argv.slice(2);

if (mode === 'sink') {
  const [url, bytes] = args;
  const ws = new WebSocket(url!, { perMessageDeflate: false, maxPayload: SINK_MAX_PAYLOAD });
  ws.on('open', () => report({ open: true }));
  receive(ws, Number(bytes));
} else if (mode === 'stream-agent') {
  // Speaks the agent protocol; every stream it is asked to serve gets BYTES of binary frames.
  const [url, deviceId, token, bytes] = args;
  const headers = { authorization: `Bearer ${token}`, 'x-tether-device-id': deviceId! };
  const control = new WebSocket(`${url!.replace('http', 'ws')}${AGENT_CONNECT_PATH}`, AGENT_SUBPROTOCOL, { headers });
  control.on('open', () => report({ online: true }));
  control.on('message', (data) => {
    const msg = JSON.parse(data.toString());
    if (msg.type !== 'stream.open') return;
    // In a cluster the stream may wait on another node (docs/cluster.md): dial where it says.
    const base = (msg.url as string | undefined) ?? url!;
    const ws = new WebSocket(`${base.replace('http', 'ws')}${AGENT_STREAM_PATH}`, AGENT_SUBPROTOCOL, {
      headers: { ...headers, 'x-tether-stream-id': msg.stream_id },
      perMessageDeflate: false,
      ...maskingFor(base), // as the real agent masks its frames
    });
    ws.on('open', () => pump(ws, Number(bytes), () => ws.close()));
  });
} else if (mode === 'agents') {
  // Light agents: one control WebSocket each, answering pings (ws does) and jobs at once, nothing
  // else; one the server drops (a pong too late on a starved machine) reconnects after 1-5 s, as
  // agents do, and resends the job results not yet acknowledged.
  const [url, file] = args;
  const devices = JSON.parse(readFileSync(file!, 'utf8')) as Array<{ id: string; token: string }>;
  const sources = ['127.0.0.1', '127.0.0.2', '127.0.0.3', '127.0.0.4'];
  let open = 0;
  let failed = 0;
  let next = 0;
  const sockets: WebSocket[] = [];
  const jobs = new Map<string, LightJobs>();
  let stopping = false;
  const connect = (d: { id: string; token: string }, source: string, again: boolean): Promise<void> =>
    new Promise((resolve) => {
      const ws = new WebSocket(`${url!.replace('http', 'ws')}${AGENT_CONNECT_PATH}`, AGENT_SUBPROTOCOL, {
        headers: { authorization: `Bearer ${d.token}`, 'x-tether-device-id': d.id },
        localAddress: source,
        perMessageDeflate: false,
      });
      sockets.push(ws);
      if (!jobs.has(d.id)) jobs.set(d.id, lightJobs(d.id));
      jobs.get(d.id)!.attach(ws);
      let opened = false;
      ws.once('open', () => {
        opened = true;
        open++;
        if (again) report({ event: 'reconnected', device: d.id, at: Date.now() });
        resolve();
      });
      ws.once('error', () => {
        if (!opened && !again) failed++;
        resolve();
      });
      ws.on('close', () => {
        if (stopping) return;
        if (opened) {
          open--;
          report({ event: 'dropped', device: d.id, at: Date.now() });
        }
        if (opened || again) setTimeout(() => void connect(d, source, true), 1000 + Math.random() * 4000);
      });
    });
  const connectOne = () => {
    const i = next++;
    return connect(devices[i]!, sources[i % sources.length]!, false);
  };
  // A connection that fails resolves (it is counted); only a bad URL or a bug rejects: end the helper,
  // as an uncaught error would, but saying which mode failed.
  (async () => {
    const workers = Array.from({ length: 64 }, async () => {
      while (next < devices.length) await connectOne();
    });
    await Promise.all(workers);
    report({ open, failed });
  })().catch((err: unknown) => {
    process.stderr.write(`agents: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  });
  process.on('SIGTERM', () => {
    stopping = true;
    for (const ws of sockets) ws.terminate();
    process.exit(0);
  });
} else if (mode === 'real-agents') {
  // The real agent's connection loop (backoff with full jitter included), many in one process:
  // reports each connection with its wall-clock time, so reconnection storms can be measured.
  const [url, file, stateDir, filesRoot] = args;
  const devices = JSON.parse(readFileSync(file!, 'utf8')) as Array<{ id: string; token: string }>;
  const log = createLogger({ level: 'error' });
  let first = 0;
  const agents = devices.map((d) => {
    const config = loadAgentConfig({ server: url, deviceId: d.id, token: d.token, stateDir, filesRoot, warmShell: '0' }, {});
    let seen = false;
    return createAgent(config, {
      log,
      onState(state) {
        if (state !== 'connected') return;
        if (!seen) {
          seen = true;
          if (++first === devices.length) report({ event: 'all-connected' });
        } else {
          report({ event: 'reconnected', device: d.id, at: Date.now() });
        }
      },
    });
  });
  // Started 25 every 50 ms: all at once, a loaded node's handshakes time out and agents move on.
  void (async () => {
    for (let i = 0; i < agents.length; i += 25) {
      for (const agent of agents.slice(i, i + 25)) agent.start();
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  process.on('SIGTERM', () => {
    void Promise.all(agents.map((a) => a.stop())).then(() => process.exit(0));
  });
} else if (!runTcpHelper(mode ?? '', args)) {
  process.stderr.write(`unknown mode ${mode}\n`);
  process.exit(2);
}
