/**
 * @module `tether webhook add | list | rm | deliveries` (administrators; docs/cli.md, Access
 * requests): an http(s) URL that receives audit events (access requests among them) as signed
 * POSTs, and the log of those deliveries. The secret that signs them is read from standard input
 * (`--secret-stdin`) so that it stays out of the shell's history and the process list; the API
 * never shows it again.
 */
import { allPages } from '../api-client';
import { WEBHOOK_LIMITS, type CreateWebhookBody, type Delivery, type Webhook } from '../../shared/api/webhooks';
import { confirm } from '../confirm';
import type { Context } from '../context';
import { usageError } from '../errors';
import { printJson, table } from '../output';
import { printable, shortTime } from './access-format';

const webhookUrl = (id: string) => `/v1/webhooks/${encodeURIComponent(id)}`;

export interface WebhookAddFlags {
  event: CreateWebhookBody['events'];
  secret?: string;
  secretStdin?: boolean;
  format?: 'json' | 'slack';
  json?: boolean;
}

/** Standard input whole, without its last line break (`echo "$SECRET" |` adds one). */
async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of process.stdin as AsyncIterable<Buffer>) {
    size += chunk.length;
    // A secret is short; more than this is not one (a file given by mistake).
    if (size > 64 * 1024) throw usageError('--secret-stdin: standard input holds far more than a secret');
    chunks.push(chunk);
  }
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
}

async function secretOf(flags: WebhookAddFlags): Promise<string> {
  if (flags.secret !== undefined && flags.secretStdin) throw usageError('give the secret once: --secret-stdin or --secret S, not both');
  if (flags.secret === undefined && !flags.secretStdin) throw usageError('a webhook needs a secret to sign its deliveries: --secret-stdin (or --secret S)');
  const secret = flags.secretStdin ? await readStdin() : flags.secret!;
  const { min, max } = WEBHOOK_LIMITS.secretChars;
  if (secret.length < min || secret.length > max)
    throw usageError(`the secret must be ${min} to ${max} characters long, not ${secret.length} (openssl rand -hex 32 makes one)`);
  return secret;
}

export async function webhookAdd(ctx: Context, url: string, flags: WebhookAddFlags): Promise<void> {
  if (!URL.canParse(url) || !['http:', 'https:'].includes(new URL(url).protocol)) throw usageError(`the URL must be an http:// or https:// URL; got ${url}`);
  const secret = await secretOf(flags);
  const body: CreateWebhookBody = { url, events: [...new Set(flags.event)], secret, ...(flags.format ? { format: flags.format } : {}) };
  const w = await ctx.api().request<Webhook>('POST', '/v1/webhooks', body);
  if (flags.json) return printJson(ctx.out, w);
  ctx.out.stdout(`added ${w.webhook_id}: ${w.events.join(', ')} to ${w.url} (${w.format}, signed with the secret: X-Tether-Signature)\n`);
}

export async function webhookList(ctx: Context, flags: { json?: boolean }): Promise<void> {
  const all = await allPages<Webhook>(ctx.api(), (paging) => `/v1/webhooks?${new URLSearchParams(paging)}`);
  if (flags.json) return printJson(ctx.out, all);
  if (all.length === 0) return ctx.out.stdout('no webhooks\n');
  const rows = all.map((w) => ({
    id: w.webhook_id,
    url: w.url,
    format: w.format,
    events: w.events.join(','),
    'created by': w.created_by,
    created: shortTime(w.created_at),
  }));
  ctx.out.stdout(table(rows, ['id', 'url', 'format', 'events', 'created by', 'created']));
}

export async function webhookRm(ctx: Context, id: string, flags: { yes?: boolean }): Promise<void> {
  await confirm(`delete webhook ${id}`, 'Its URL then receives nothing more; deliveries still pending end failed', flags.yes);
  await ctx.api().request('DELETE', webhookUrl(id));
  ctx.out.stdout(`deleted ${id}\n`);
}

/** What happened to a delivery last: `200`, `HTTP 500`, or the error (`ECONNREFUSED`). */
function lastText(d: Delivery): string {
  if (d.status === 'delivered') return d.last_status_code === null ? 'delivered' : `HTTP ${d.last_status_code}`;
  if (d.last_error) return printable(d.last_error).slice(0, 60);
  return d.last_status_code === null ? '-' : `HTTP ${d.last_status_code}`;
}

/** `tether webhook deliveries ID [--status S] [--limit N]`: the newest deliveries first. */
export async function webhookDeliveries(ctx: Context, id: string, flags: { status?: string; limit?: number; json?: boolean }): Promise<void> {
  const q = new URLSearchParams({ per_page: String(flags.limit ?? 50) });
  if (flags.status) q.set('status', flags.status);
  const deliveries = await ctx.api().request<Delivery[]>('GET', `${webhookUrl(id)}/deliveries?${q}`);
  if (flags.json) return printJson(ctx.out, deliveries);
  if (deliveries.length === 0) return ctx.out.stdout(flags.status ? `no ${flags.status} deliveries to ${id}\n` : `no deliveries to ${id} yet\n`);
  const rows = deliveries.map((d) => ({
    id: d.delivery_id,
    event: d.event,
    status: d.status,
    attempts: d.attempts,
    last: lastText(d),
    created: shortTime(d.created_at),
    next: d.status === 'pending' ? shortTime(d.next_attempt_at) : '-',
    delivered: shortTime(d.delivered_at),
  }));
  ctx.out.stdout(table(rows, ['id', 'event', 'status', 'attempts', 'last', 'created', 'next', 'delivered']));
}
