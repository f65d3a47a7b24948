/** @module `tether login` and `tether token`: getting a user token, storing it and showing it (docs/cli.md). */
import type { IssuedToken } from '../../shared/api/identity';
import { ApiFailure, createApiClient } from '../api-client';
import { configPath, loginHint, readConfig, writeConfig } from '../config';
import type { Context } from '../context';
import { CliError, usageError } from '../errors';
import { readPasswords } from '../prompt';

/** Exchanges a password for a token and stores it, keeping the config file's other fields. */
export async function login(ctx: Context, opts: { server?: string; username?: string; passwordStdin?: boolean }): Promise<void> {
  const stored = readConfig(ctx.env);
  const server = (opts.server ?? ctx.env.TETHER_SERVER ?? stored.server)?.replace(/\/+$/, '');
  if (!server) throw usageError('which server? use --server URL');
  if (!/^https?:\/\//.test(server)) throw usageError(`--server must be an http:// or https:// URL, not ${server}`);
  const username = opts.username ?? stored.username;
  if (!username) throw usageError('which user? use --username NAME');
  const [password] = await readPasswords(opts.passwordStdin, [{ what: 'password', ask: `Password for ${username} at ${server}: ` }]);

  // No waiting out a 429 here: it means too many failed logins, and the same password again
  // would only count once more against the user.
  const api = createApiClient({ server, notice: ctx.notice, maxRateLimitRetries: 0 });
  let issued: IssuedToken;
  try {
    issued = await api.request<IssuedToken>('POST', '/v1/auth/token', { username, password });
  } catch (err) {
    // The server says what failed (a wrong user or password, a disabled account); the advice to
    // log in again that goes with a rejected token is no help to someone logging in.
    if (err instanceof ApiFailure && err.status === 401) throw new CliError(`login failed: ${err.body.message} (${username} at ${server})`, err.code);
    throw err;
  }
  const path = writeConfig(ctx.env, { ...stored, server, token: issued.token, token_id: issued.token_id, username, expires_at: issued.expires_at });
  ctx.notice(`logged in to ${server} as ${username}; the token is valid until ${issued.expires_at} (saved in ${path})`);
}

/** Prints TETHER_TOKEN, else the stored token; says how to log in when there is none. */
export function token(ctx: Context): void {
  if (ctx.env.TETHER_TOKEN) return ctx.out.stdout(`${ctx.env.TETHER_TOKEN}\n`);
  const stored = readConfig(ctx.env);
  if (!stored.token) {
    throw new CliError(
      `no token: TETHER_TOKEN is not set and none is stored in ${configPath(ctx.env)}; log in with \`${loginHint(ctx.env, stored)}\``,
      'not_logged_in',
    );
  }
  if (stored.expires_at && Date.parse(stored.expires_at) <= Date.now()) {
    throw new CliError(`the stored token expired at ${stored.expires_at}; log in again with \`${loginHint(ctx.env, stored)}\``, 'bad_config');
  }
  ctx.out.stdout(`${stored.token}\n`);
}
