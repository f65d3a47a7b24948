/**
 * @module HAProxy's runtime API over its admin socket, in non-interactive mode: one connection per
 * command, HAProxy answers and closes. Parsers for the answers the ingress reads (`show info`,
 * `show map`, `show servers state`, `show stat`). Arguments reach here validated (ingress.ts):
 * no spaces, semicolons or newlines, which would split a command.
 */
import { connect } from 'node:net';
import { IngressError } from './errors';

const COMMAND_TIMEOUT_MS = 5000;

/** Sends one command; resolves with HAProxy's whole answer. */
export function command(socketPath: string, line: string, timeoutMs = COMMAND_TIMEOUT_MS): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(socketPath);
    let answer = '';
    const fail = (why: string) => {
      socket.destroy();
      reject(new IngressError('runtime_api', `HAProxy runtime API (${socketPath}) ${line.split(' ', 2).join(' ')}: ${why}`));
    };
    socket.setTimeout(timeoutMs, () => fail('no answer in time'));
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (answer += chunk));
    socket.once('error', (err) => fail(err.message));
    socket.once('end', () => {
      socket.destroy();
      resolve(answer);
    });
    socket.end(`${line}\n`);
  });
}

/** Sends a command whose success answer is known (empty for most `set` commands); anything else is an error. */
export async function expect(socketPath: string, line: string, ok: RegExp = /^$/): Promise<string> {
  const answer = (await command(socketPath, line)).trim();
  if (!ok.test(answer)) throw new IngressError('runtime_api', `HAProxy refused "${line}": ${answer || '(no answer)'}`);
  return answer;
}

/** `show info` as key → value (`Pid`, `description`, ...). */
export function parseInfo(answer: string): Map<string, string> {
  const info = new Map<string, string>();
  for (const line of answer.split('\n')) {
    const at = line.indexOf(': ');
    if (at > 0) info.set(line.slice(0, at), line.slice(at + 2));
  }
  return info;
}

/** `show map FILE`: `0xID key value` lines, as [key, value] pairs in order. */
export function parseMap(answer: string): Array<[string, string]> {
  return answer
    .split('\n')
    .map((line) => line.trim().split(/\s+/))
    .filter((parts) => parts.length === 3 && parts[0]!.startsWith('0x'))
    .map((parts) => [parts[1]!, parts[2]!]);
}

/** A server as `show servers state` shows it. */
export interface ServerState {
  backend: string;
  name: string;
  /** `ip:port`, IPv6 in brackets. */
  address: string;
  weight: number;
  /** srv_admin_state bits: 0x01 forced maintenance, 0x08 forced drain (server.h SRV_ADMF_*). */
  admin: number;
}

export const ADMIN_MAINT = 0x01;
export const ADMIN_DRAIN = 0x08;

/** `show servers state [BACKEND]` (format version 1): a header naming the fields, then a line per server. */
export function parseServersState(answer: string): ServerState[] {
  const lines = answer.split('\n');
  const header = lines.find((l) => l.startsWith('# be_id'));
  if (!header) return [];
  const fields = header.slice(2).split(' ');
  const at = (name: string) => fields.indexOf(name);
  return lines
    .filter((l) => /^\d/.test(l) && l.includes(' '))
    .map((l) => l.split(' '))
    .map((v) => {
      const ip = v[at('srv_addr')]!;
      return {
        backend: v[at('be_name')]!,
        name: v[at('srv_name')]!,
        address: `${ip.includes(':') ? `[${ip}]` : ip}:${v[at('srv_port')]}`,
        weight: Number(v[at('srv_uweight')]),
        admin: Number(v[at('srv_admin_state')]),
      };
    });
}

/** `show stat BACKEND 4 -1` (CSV with a `# ` header): current sessions (`scur`) per server name. */
export function parseSessions(answer: string): Map<string, number> {
  const lines = answer.split('\n').filter((l) => l.length > 0);
  const header = lines[0]?.replace(/^# /, '').split(',') ?? [];
  const name = header.indexOf('svname');
  const scur = header.indexOf('scur');
  const sessions = new Map<string, number>();
  for (const line of lines.slice(1)) {
    const v = line.split(',');
    if (v[name] !== 'BACKEND' && v[name] !== 'FRONTEND') sessions.set(v[name]!, Number(v[scur]));
  }
  return sessions;
}
