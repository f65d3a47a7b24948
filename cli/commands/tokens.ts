/**
 * @module `tether token list` and `tether token revoke`: the tokens of your user (administrators:
 * everyone's) and ending one (docs/http-api.md, users and tokens; docs/cli.md).
 */
import type { Token, TokenRevoked } from '../../shared/api/identity';
import type { Context } from '../context';
import { printJson, table } from '../output';

const PAGE = 200;
const shortTime = (iso: string) => iso.replace(/\.\d+Z$/, 'Z');

export interface TokenListFlags {
  all?: boolean;
  status?: string;
  json?: boolean;
}

export async function tokenList(ctx: Context, flags: TokenListFlags): Promise<void> {
  const q = new URLSearchParams({ per_page: String(PAGE), status: flags.status ?? 'active' });
  if (flags.all) q.set('all', 'true');
  const tokens = await ctx.api().request<Token[]>('GET', `/v1/tokens?${q}`);
  if (flags.json) return printJson(ctx.out, tokens);
  if (tokens.length === 0) return ctx.out.stdout(`no ${flags.status === 'all' ? '' : `${flags.status ?? 'active'} `}tokens\n`);
  const rows = tokens.map((t) => ({
    token: `${t.token_id}${t.current ? ' (this one)' : ''}`,
    user: t.username,
    scopes: t.scopes.join(',') || '-',
    state: t.status,
    created: shortTime(t.created_at),
    expires: t.expires_at ? shortTime(t.expires_at) : 'never',
  }));
  ctx.out.stdout(table(rows, ['token', 'user', 'scopes', 'state', 'created', 'expires']));
  if (tokens.length === PAGE) ctx.notice(`showing the newest ${PAGE}`);
}

export async function tokenRevoke(ctx: Context, tokenId: string, flags: { json?: boolean }): Promise<void> {
  const answer = await ctx.api().request<TokenRevoked>('DELETE', `/v1/tokens/${encodeURIComponent(tokenId)}`);
  if (flags.json) return printJson(ctx.out, answer);
  ctx.out.stdout(`revoked ${tokenId}: it answers 401 from now on; the sessions it opened are closed\n`);
}
