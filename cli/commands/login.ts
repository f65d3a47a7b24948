/** @module `tether login` and `tether token`: getting a user token and showing it. */
import { createApiClient } from '../api-client';
import { readConfig, writeConfig, credentials } from '../config';
import type { Context } from '../context';
import { CliError, usageError } from '../errors';

/** Reads all of stdin; the trailing newline is not part of the password. */
async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8').replace(/\r?\n$/, '');
}

/** Asks on the terminal without echoing what is typed. */
function askHidden(question: string): Promise<string> {
  const stdin = process.stdin;
  return new Promise((resolve, reject) => {
    process.stderr.write(question);
    let value = '';
    const wasRaw = stdin.isRaw;
    stdin.setRawMode(true);
    stdin.resume();
    const finish = (err?: Error) => {
      stdin.off('data', onData);
      stdin.setRawMode(wasRaw);
      stdin.pause();
      process.stderr.write('\n');
      if (err) reject(err);
      else resolve(value);
    };
    const onData = (data: Buffer) => {
      for (const ch of data.toString('utf8')) {
        if (ch === '\r' || ch === '\n') return finish();
        if (ch === '\u0003') return finish(new CliError('cancelled', 'cancelled'));
        if (ch === '\u007f' || ch === '\b') value = value.slice(0, -1);
        else if (ch >= ' ') value += ch;
      }
    };
    stdin.on('data', onData);
  });
}

export async function login(ctx: Context, opts: { server?: string; username?: string; passwordStdin?: boolean }): Promise<void> {
  const stored = readConfig(ctx.env);
  const server = (opts.server ?? ctx.env.TETHER_SERVER ?? stored.server)?.replace(/\/+$/, '');
  if (!server) throw usageError('which server? use --server URL');
  if (!/^https?:\/\//.test(server)) throw usageError(`--server must be an http:// or https:// URL, not ${server}`);
  const username = opts.username ?? stored.username;
  if (!username) throw usageError('which user? use --username NAME');
  let password: string;
  if (opts.passwordStdin) password = await readStdin();
  else if (process.stdin.isTTY) password = await askHidden(`Password for ${username} at ${server}: `);
  else throw usageError('no terminal to ask for the password on; pipe it in with --password-stdin');
  if (!password) throw usageError('the password is empty');

  const api = createApiClient({ server, notice: ctx.notice });
  const issued = await api.request<{ token: string; token_id: string; expires_at: string }>('POST', '/v1/auth/token', {
    username,
    password,
  });
  const path = writeConfig(ctx.env, { server, token: issued.token, username, expires_at: issued.expires_at });
  ctx.notice(`logged in to ${server} as ${username}; the token is valid until ${issued.expires_at} (saved in ${path})`);
}

export function token(ctx: Context): void {
  const { token } = credentials(ctx.env);
  const stored = readConfig(ctx.env);
  if (!ctx.env.TETHER_TOKEN && stored.expires_at && Date.parse(stored.expires_at) <= Date.now()) {
    throw new CliError(`the stored token expired at ${stored.expires_at}; run tether login again`, 'bad_config');
  }
  ctx.out.stdout(`${token}\n`);
}
