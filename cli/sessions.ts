/**
 * @module Opening a session the way the API asks clients to (docs/http-api.md, errors): a 409 is
 * explained with the session in the way (and `--replace` closes it first); a 422 is explained (and
 * `--wait-online` waits for the agent).
 */
import type { SessionProtocol } from '../shared/control-channel';
import { ApiFailure, type ApiClient } from './api-client';
import { CliError } from './errors';
import { openStream, type ClientStream } from './stream';

export interface Session {
  session_id: string;
  device_id: string;
  protocol: SessionProtocol;
  status: 'open' | 'closed';
  ttl_seconds: number;
  opened_by: string;
  opened_at: string;
  expires_at: string;
  closed_at: string | null;
  close_reason: string | null;
  websocket_url?: string;
  bytes_to_device: number;
  bytes_from_device: number;
  trace_id: string;
  /** A port-forward session's targets. */
  targets?: string[];
  /** Where its recording stands (shell sessions), or null. */
  recording?: { bytes: number; sha256: string; duration_s: number; truncated: boolean; stored_bytes: number; input: boolean; in_progress: boolean } | null;
}

export interface OpenOptions {
  device: string;
  protocol: SessionProtocol;
  ttl?: number | undefined;
  /** A port-forward session's targets (`HOST:PORT`). */
  targets?: string[] | undefined;
  replace?: boolean | undefined;
  waitOnline?: boolean | undefined;
  /** How long --wait-online waits, in seconds. */
  waitTimeoutS?: number | undefined;
  notice: (line: string) => void;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function openSessionsOf(api: ApiClient, device: string, protocol: SessionProtocol): Promise<Session[]> {
  const q = new URLSearchParams({ device_id: device, protocol, status: 'open', per_page: '200' });
  return api.request<Session[]>('GET', `/v1/remote-access/sessions?${q}`);
}

async function waitOnline(api: ApiClient, device: string, timeoutS: number, notice: (l: string) => void): Promise<void> {
  notice(`waiting up to ${timeoutS} s for the agent of ${device} to come online…`);
  const deadline = Date.now() + timeoutS * 1000;
  while (Date.now() < deadline) {
    const status = await api.request<{ agent_status: string }>('GET', `/v1/devices/${encodeURIComponent(device)}/agent-status`);
    if (status.agent_status === 'online') return;
    await sleep(1000);
  }
  throw new CliError(`the agent of ${device} did not come online within ${timeoutS} s`, 'timeout');
}

export async function openSession(api: ApiClient, o: OpenOptions): Promise<Session> {
  const body = {
    device_id: o.device,
    protocol: o.protocol,
    ...(o.ttl === undefined ? {} : { ttl_seconds: o.ttl }),
    ...(o.targets === undefined ? {} : { targets: o.targets }),
  };
  let replaced = false;
  let waited = false;
  for (;;) {
    try {
      return await api.request<Session>('POST', '/v1/remote-access/sessions', body);
    } catch (err) {
      if (!(err instanceof ApiFailure)) throw err;
      if (err.status === 409) {
        const existing = await openSessionsOf(api, o.device, o.protocol).catch(() => []);
        const ids = existing.map((s) => `${s.session_id} (opened by ${s.opened_by})`).join(', ');
        if (!o.replace || replaced) {
          throw new CliError(
            `a ${o.protocol} session is already open for ${o.device}${ids ? `: ${ids}` : ' (opened by someone you cannot see)'}.\n` +
              (o.replace ? 'It could not be replaced.' : 'Run again with --replace to close it first, or close it with `tether session close ID`.'),
            err.code,
          );
        }
        if (existing.length === 0) throw new CliError(`a ${o.protocol} session for ${o.device} is open, but not yours to close`, err.code);
        for (const s of existing) {
          o.notice(`closing session ${s.session_id} (--replace)`);
          await api.request('DELETE', `/v1/remote-access/sessions/${s.session_id}`);
        }
        replaced = true;
        continue;
      }
      if (err.status === 422 && err.code === 'target_not_allowed') throw new CliError(err.body.message, err.code);
      if (err.status === 422) {
        if (!o.waitOnline || waited) {
          throw new CliError(
            `the agent of ${o.device} is offline (not connected to the broker).\n` +
              'Run again with --wait-online to wait for it.',
            err.code,
          );
        }
        await waitOnline(api, o.device, o.waitTimeoutS ?? 300, o.notice);
        waited = true;
        continue;
      }
      if (err.status === 404) throw new CliError(`${err.body.message} (is the device id right?)`, err.code);
      if (err.status === 403) throw new CliError(err.body.message, err.code);
      throw err;
    }
  }
}

/** Closes a session, quietly if it is already closed (the copy or shell is over either way). */
export async function closeSession(api: ApiClient, sessionId: string): Promise<void> {
  try {
    await api.request('DELETE', `/v1/remote-access/sessions/${sessionId}`);
  } catch (err) {
    if (err instanceof ApiFailure && err.status === 404) return;
    throw err;
  }
}

/**
 * Opens a session, connects to its stream, runs `work` on it, and closes both whatever happens:
 * the shape of every request/response command (`diag`, `cp`).
 */
export async function withSessionStream<T>(api: ApiClient, o: OpenOptions, work: (stream: ClientStream) => Promise<T>): Promise<T> {
  const session = await openSession(api, o);
  let stream: ClientStream | undefined;
  try {
    stream = await openStream(session.websocket_url!);
    return await work(stream);
  } finally {
    stream?.close();
    await closeSession(api, session.session_id);
  }
}
