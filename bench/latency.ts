/**
 * @module Section 3: time to shell, from `POST /v1/remote-access/sessions` to the first byte of
 * the prompt, beside `ssh host true` and `ssh -J host true` when a private sshd can run; and
 * opening a shell session as tether's own client does (`openShell`, also the echo's, ./echo).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { IssuedToken } from '../shared/api/identity';
import type { Session } from '../shared/api/sessions';
import { connectWsClient } from '../shared/websocket/client';
import { call, median, percentile, round, startAgent, tempDir, wallMs, type Data, type Result, type ServerProcess } from './lib';
import { DIRECT, JUMPED, startSshd } from './sshd';

const SESSION_GAP_MS = 500;

export async function openShell(server: ServerProcess, deviceId: string, token = server.token) {
  const t0 = performance.now();
  const res = await call<Data<Session>>(`${server.url}/v1/remote-access/sessions`, 'POST', token, { device_id: deviceId, protocol: 'shell' });
  if (res.status !== 201) throw new Error(`open shell: ${res.status} ${JSON.stringify(res.body)}`);
  // tether's own WebSocket client, as `tether shell` dials the stream.
  const ws = await connectWsClient(res.body.data.websocket_url!, { maxPayload: 16 * 1024 * 1024 });
  const firstByte = await new Promise<number>((resolve) => {
    const first = () => {
      ws.off('binary', first).off('text', first);
      resolve(performance.now() - t0);
    };
    ws.on('binary', first).on('text', first);
  });
  return { ws, sessionId: res.body.data.session_id, firstByte };
}

export async function timeToShellBench(server: ServerProcess, sessions: number): Promise<Result[]> {
  const agent = await startAgent(server, 'bench-tts', tempDir('tether-bench-tts-'));
  try {
    // 30 opens per minute per user (seed 8): spread the sessions over enough users.
    const users: string[] = [];
    for (let i = 0; i < Math.ceil(sessions / 25); i++) {
      await call(`${server.url}/v1/users`, 'POST', server.token, { username: `bench-pe-${i}`, role: 'platform-engineer' });
      users.push((await call<Data<IssuedToken>>(`${server.url}/v1/tokens`, 'POST', server.token, { username: `bench-pe-${i}` })).body.data.token);
    }
    /** One shell session: milliseconds from the POST to the first byte of the prompt. */
    const once = async (i: number) => {
      const token = users[i % users.length]!;
      const { ws, sessionId, firstByte } = await openShell(server, 'bench-tts', token);
      ws.close(1000, '');
      await call(`${server.url}/v1/remote-access/sessions/${sessionId}`, 'DELETE', token);
      return firstByte;
    };
    // The agent pre-starts shells from its first shell session on: that one waits for a login
    // shell's own start-up. It is reported on its own; the percentiles are of the sessions after.
    const cold = await once(0);
    const times: number[] = [];
    for (let i = 1; i <= sessions; i++) {
      // Half a second apart, as people open shells; back to back, each session would wait for
      // the agent's next pre-started shell to finish its own start-up.
      await sleep(SESSION_GAP_MS);
      times.push(await once(i));
    }
    times.sort((a, b) => a - b);
    const p50 = percentile(times, 50);
    const p99 = percentile(times, 99);
    return [
      {
        section: 'time to shell',
        name: `POST to first prompt byte p50 (${sessions} sessions)`,
        value: round(p50, 1),
        unit: 'ms',
        target: '<= 15',
        met: p50 <= 15,
      },
      { section: 'time to shell', name: 'POST to first prompt byte p99', value: round(p99, 1), unit: 'ms', target: '<= 50', met: p99 <= 50 },
      {
        section: 'time to shell',
        name: 'first shell session after the agent starts (no pre-started shell yet)',
        value: round(cold, 1),
        unit: 'ms',
        target: 'reported',
        met: null,
      },
      ...(await sshTrue(Math.min(20, sessions))),
    ];
  } finally {
    await agent.stop();
  }
}

/** `ssh host true` and `ssh -J host true`, a run of each per round, when a private sshd can run. */
async function sshTrue(rounds: number): Promise<Result[]> {
  const sshd = await startSshd();
  if (!sshd)
    return [{ section: 'time to shell', name: 'ssh host true and ssh -J host true (no sshd installed)', value: 'skipped', unit: '-', target: '-', met: null }];
  const direct: number[] = [];
  const jumped: number[] = [];
  try {
    for (let i = 0; i < rounds; i++) {
      direct.push(wallMs('ssh', [...sshd.options, DIRECT, 'true']));
      jumped.push(wallMs('ssh', [...sshd.options, JUMPED, 'true']));
    }
  } finally {
    sshd.stop();
  }
  return [
    { section: 'time to shell', name: 'ssh host true p50', value: round(median(direct), 1), unit: 'ms', target: 'reported', met: null },
    { section: 'time to shell', name: 'ssh -J host true p50', value: round(median(jumped), 1), unit: 'ms', target: 'reported', met: null },
  ];
}
