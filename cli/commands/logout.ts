/**
 * @module `tether logout`: revokes the stored token on its server (a token may revoke itself,
 * docs/http-api.md) and forgets it locally, keeping the config file's other fields and mode. An
 * unreachable server or a token that is no longer valid does not stop the forgetting (docs/cli.md).
 */
import type { Me } from '../../shared/api/identity';
import { createApiClient } from '../api-client';
import { configPath, forgetToken, readConfig, type StoredConfig } from '../config';
import type { Context } from '../context';
import { CliError } from '../errors';

/** How long logout waits for the server before it forgets the token anyway. */
const REVOKE_TIMEOUT_MS = 10_000;

interface Revocation {
  /** What happened to the token on the server, in words. */
  said: string;
  /** The server refused: the token is still valid there. */
  refused?: CliError;
}

/** Revokes the stored token with itself; never throws. */
async function revoke(ctx: Context, stored: StoredConfig & { token: string }): Promise<Revocation> {
  const server = stored.server?.replace(/\/+$/, '');
  const valid = stored.expires_at ? `; it stays valid until ${stored.expires_at}` : '';
  if (!server) return { said: `no server is stored with the token, so it was not revoked${valid}` };
  const api = createApiClient({ server, token: stored.token, notice: ctx.notice, maxRateLimitRetries: 1, timeoutMs: REVOKE_TIMEOUT_MS });
  try {
    const tokenId = stored.token_id ?? (await api.request<Me>('GET', '/v1/me')).token_id;
    await api.request('DELETE', `/v1/tokens/${encodeURIComponent(tokenId)}`);
    return { said: `revoked the token on ${server}` };
  } catch (err) {
    const failure = err instanceof CliError ? err : new CliError(String(err), 'unreachable');
    if (failure.code === 'unreachable') return { said: `${failure.message}, so the token was not revoked${valid}` };
    if (failure.code === 'unauthorized') return { said: `the token was no longer valid on ${server}` };
    return { said: `${server} did not revoke the token: ${failure.message}`, refused: failure };
  }
}

export async function logout(ctx: Context): Promise<void> {
  const stored = readConfig(ctx.env);
  const path = configPath(ctx.env);
  const envNote = () => {
    if (ctx.env.TETHER_TOKEN) ctx.notice('TETHER_TOKEN is still set in this environment and is used instead; unset it too');
  };
  if (!stored.token) {
    ctx.notice(`not logged in: no token is stored in ${path}`);
    return envNote();
  }
  const revocation = await revoke(ctx, { ...stored, token: stored.token });
  forgetToken(ctx.env);
  ctx.notice(`${revocation.said}; removed it from ${path}`);
  envNote();
  if (revocation.refused) {
    const id = stored.token_id ? ` (tether token revoke ${stored.token_id})` : '';
    throw new CliError(`the token is still valid on the server: ask an administrator to revoke it${id}`, revocation.refused.code);
  }
}
