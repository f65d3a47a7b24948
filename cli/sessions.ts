/**
 * @module Opening a session the way the API asks clients to (docs/http-api.md, errors): a 409 is
 * explained with whose session is in the way (its `holder`, never its message's words): your own
 * one `--replace` closes first; someone else's is named with when it was opened. A 422 is explained
 * (and `--wait-online` waits for the agent).
 */
import type { AgentStatusView } from '../shared/api/devices';
import type { Me } from '../shared/api/identity';
import type { SessionHolder } from '../shared/api/errors';
import type { OpenSessionBody, Session } from '../shared/api/sessions';
import type { SessionProtocol } from '../shared/protocol/control-channel';
import { ApiFailure, type ApiClient } from './api-client';
import { CliError } from './errors';
import { openStream, type ClientStream } from './stream';

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

/** Who the token belongs to; undefined when that cannot be known (then no session is taken for yours). */
async function whoAmI(api: ApiClient): Promise<Me | undefined> {
  return api.request<Me>('GET', '/v1/me').catch(() => undefined);
}

/** The error for a session of someone else's in the way: who, since when, and what can end it. */
async function heldByOther(api: ApiClient, o: OpenOptions, holder: SessionHolder, me: Me | undefined, code: string): Promise<CliError> {
  // An administrator sees the session and may close it; nobody else learns more than the holder.
  const theirs = me?.role === 'administrator' ? await openSessionsOf(api, o.device, o.protocol).catch(() => []) : [];
  const close = theirs[0] ? `\nAs an administrator you may close it: tether session close ${theirs[0].session_id}` : '';
  return new CliError(
    `a ${o.protocol} session is already open for ${o.device}: ${holder.opened_by} holds it (opened at ${holder.opened_at}).\n` +
      'It closes when its owner closes it, when its TTL runs out, or once no client has been connected to it for a while.' +
      (o.replace ? ' --replace closes only your own sessions.' : '') +
      close,
    code,
  );
}

async function waitOnline(api: ApiClient, device: string, timeoutS: number, notice: (l: string) => void): Promise<void> {
  notice(`waiting up to ${timeoutS} s for the agent of ${device} to come online…`);
  const deadline = Date.now() + timeoutS * 1000;
  while (Date.now() < deadline) {
    const status = await api.request<AgentStatusView>('GET', `/v1/devices/${encodeURIComponent(device)}/agent-status`);
    if (status.agent_status === 'online') return;
    await sleep(1000);
  }
  throw new CliError(`the agent of ${device} did not come online within ${timeoutS} s`, 'timeout');
}

export async function openSession(api: ApiClient, o: OpenOptions): Promise<Session> {
  const body: OpenSessionBody = {
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
      if (err.code === 'conflict' && err.body.holder) {
        const { holder } = err.body;
        const me = await whoAmI(api);
        if (!me || holder.opened_by !== me.username) throw await heldByOther(api, o, holder, me, err.code);
        const mine = (await openSessionsOf(api, o.device, o.protocol).catch(() => [])).filter((s) => s.opened_by === me.username);
        if (!o.replace || replaced) {
          const ids = mine.map((s) => s.session_id).join(', ');
          throw new CliError(
            `a ${o.protocol} session is already open for ${o.device}: yours${ids ? ` (${ids})` : ''}, opened at ${holder.opened_at}.\n` +
              (o.replace ? 'It could not be replaced.' : 'Run again with --replace to close it first, or close it with `tether session close ID`.'),
            err.code,
          );
        }
        for (const s of mine) {
          o.notice(`closing session ${s.session_id} (--replace)`);
          await closeSession(api, s.session_id);
        }
        replaced = true;
        continue;
      }
      if (err.code === 'conflict') throw new CliError(err.body.message, err.code);
      if (err.status === 422 && err.code === 'target_not_allowed') throw new CliError(err.body.message, err.code);
      if (err.status === 422) {
        if (!o.waitOnline || waited) {
          throw new CliError(`the agent of ${o.device} is offline (not connected to the broker).\n` + 'Run again with --wait-online to wait for it.', err.code);
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
