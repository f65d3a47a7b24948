/**
 * @module Which of its servers the agent dials (`--server`, one or several), and where it dials a
 * stream the relay asks for: the server of the control channel, or the cluster node the client
 * joined, when that is one of the agent's own servers or the control node signed the request (a
 * node or a bus that only relays cannot send the device elsewhere); never from TLS to plain.
 */
import { agentKey, proofMatches, streamOpenSignature } from '../shared/auth/agent-proofs';
import type { Logger } from '../shared/log';
import { serverUrls, type AgentConfig, type AgentServer } from './config';
import type { StreamRequest } from './stream-dialer';

export function createServerChoice(config: Readonly<AgentConfig>, log: Logger, random: () => number = Math.random) {
  const key = agentKey(config.token);
  /** The server the agent connects to now (an index into `config.servers`). */
  let current = 0;

  return {
    /** The server to dial now. */
    get current(): AgentServer {
      return config.servers[current]!;
    },

    /** After a failure, another server, chosen at random so that a failed node's agents spread over the rest. */
    moveOn(): void {
      const n = config.servers.length;
      if (n < 2) return;
      const from = current;
      current = (current + 1 + Math.floor(random() * (n - 1))) % n;
      log.info('moving to another server', { from: config.servers[from]!.connectUrl, to: config.servers[current]!.connectUrl });
    },

    /** Where to dial the stream `msg` asks for; undefined: not a place to dial. */
    streamUrlFor(msg: StreamRequest): string | undefined {
      const own = config.servers[current]!;
      if (msg.url === undefined) return own.streamUrl;
      let wanted: string;
      try {
        wanted = serverUrls(msg.url).streamUrl;
      } catch {
        return undefined;
      }
      if (!/^wss?:\/\//.test(wanted)) return undefined;
      if (own.connectUrl.startsWith('wss:') && !wanted.startsWith('wss:')) return undefined;
      if (config.servers.some((s) => s.streamUrl === wanted)) return wanted;
      const expected = streamOpenSignature(key, { ...msg, device_id: config.deviceId });
      return msg.sig !== undefined && proofMatches(expected, msg.sig) ? wanted : undefined;
    },
  };
}
export type ServerChoice = ReturnType<typeof createServerChoice>;
