/**
 * The end-to-end harness: a real server in this process (temp data dir, port 0) and real agent
 * processes, so each scenario is a few lines. `stop()` ends everything it started.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadServerConfig } from '../../cmd/server-config';
import { startServer, type RunningServer } from '../../cmd/server';
import { createLogger } from '../../shared/log';
import { client, type Client } from './http';
import { startProcess, type Proc } from './processes';
import { storeEnvFor } from './store';
import { tempDir } from './temp';
import { waitFor } from './wait';

export interface StackOptions {
  dataDir?: string;
  heartbeatMs?: number;
  now?: () => number;
  port?: number;
  joinTimeoutMs?: number;
  simReplicaMs?: number;
  /** More server settings, as environment variables. */
  env?: Record<string, string>;
}

export interface Stack {
  url: string;
  port: number;
  dataDir: string;
  adminToken: string;
  admin: Client;
  server: RunningServer;
  /** Every log line the server wrote. */
  logs: string[];
  /** A client with another token. */
  as(token: string): Client;
  /** Registers a device and returns its agent token. */
  addDevice(deviceId: string): Promise<string>;
  /** Starts a real agent process for a registered device. */
  startAgent(deviceId: string, agentToken: string, env?: Record<string, string>): Proc;
  /** Registers a device, starts its agent and waits until it is online. */
  onlineDevice(deviceId: string, env?: Record<string, string>): Promise<{ token: string; agent: Proc }>;
  agentStatus(deviceId: string): Promise<string>;
  waitForStatus(deviceId: string, status: 'online' | 'offline', timeoutMs?: number): Promise<void>;
  /** Creates a user with a role and returns a token for it. */
  userToken(username: string, role: string | null, kind?: 'human' | 'service'): Promise<string>;
  stop(): Promise<void>;
  /** Stops the server only (agents keep running), for restart scenarios. */
  stopServer(): Promise<void>;
}

export { tempDir } from './temp';

export async function startStack(options: StackOptions = {}): Promise<Stack> {
  const dataDir = options.dataDir ?? tempDir();
  const logs: string[] = [];
  const config = loadServerConfig(
    {
      TETHER_LISTEN: `127.0.0.1:${options.port ?? 0}`,
      TETHER_DATA_DIR: dataDir,
      TETHER_HEARTBEAT_MS: String(options.heartbeatMs ?? 20_000),
      TETHER_SIM_REPLICA_MS: String(options.simReplicaMs ?? 20),
      ...(await storeEnvFor(dataDir)),
      ...options.env,
    },
    undefined,
  );
  const server = await startServer(config, {
    now: options.now,
    joinTimeoutMs: options.joinTimeoutMs,
    log: createLogger({ level: 'debug', write: (line) => logs.push(line) }),
    print: () => {},
  });
  const adminToken = readFileSync(join(dataDir, 'admin.token'), 'utf8').trim();
  const admin = client(server.url, adminToken);
  const agents: Proc[] = [];
  let serverStopped = false;

  const stack: Stack = {
    url: server.url,
    port: server.port,
    dataDir,
    adminToken,
    admin,
    server,
    logs,
    as: (token) => client(server.url, token),
    async addDevice(deviceId) {
      const res = await admin.post('/v1/devices', { device_id: deviceId });
      if (res.status !== 201) throw new Error(`device ${deviceId}: ${res.status} ${res.text}`);
      return res.body.data.agent_token as string;
    },
    startAgent(deviceId, agentToken, env = {}) {
      const agent = startProcess(['agent', '--server', server.url, '--device-id', deviceId], {
        TETHER_DEVICE_TOKEN: agentToken,
        ...env,
      });
      agents.push(agent);
      return agent;
    },
    async onlineDevice(deviceId, env = {}) {
      const token = await stack.addDevice(deviceId);
      const agent = stack.startAgent(deviceId, token, env);
      await stack.waitForStatus(deviceId, 'online');
      return { token, agent };
    },
    async agentStatus(deviceId) {
      const res = await admin.get(`/v1/devices/${deviceId}/agent-status`);
      return res.body.data.agent_status as string;
    },
    waitForStatus: async (deviceId, status, timeoutMs = 10_000) => {
      await waitFor(async () => (await stack.agentStatus(deviceId)) === status, `${deviceId} ${status}`, timeoutMs);
    },
    async userToken(username, role, kind = 'human') {
      const created = await admin.post('/v1/users', { username, role, kind });
      if (created.status !== 201) throw new Error(`user ${username}: ${created.status} ${created.text}`);
      const issued = await admin.post('/v1/tokens', { username });
      return issued.body.data.token as string;
    },
    async stopServer() {
      if (serverStopped) return;
      serverStopped = true;
      await server.stop();
    },
    async stop() {
      await Promise.all(agents.map((a) => a.stop()));
      await stack.stopServer();
    },
  };
  return stack;
}
