/**
 * @module `tether deploy list | get | history | rollback | rm` and `tether deploy canary get |
 * weight | halt | promote`: services per environment (docs/http-api.md, deployments). `apply` is
 * in deploy/apply.ts, `logs` in deploy/logs.ts.
 */
import { allPages } from '../api-client';
import { confirm } from '../confirm';
import type { Context } from '../context';
import { describe } from '../describe';
import { printJson, table } from '../output';
import type { CanaryState, Environment, Service, ServiceChange, ServiceDeleted, ServiceDetail, Revision } from '../../shared/api/services';
import { canarySplit, ENVIRONMENTS, failureLines, readyByRevision, serviceUrl, shortTime, stateOf, whyFailed, type EnvFlag } from './deploy/service';

export { deployApply } from './deploy/apply';
export { deployLogs } from './deploy/logs';

const PAGE = 100;
const canaryText = (s: Service) => (s.canary ? `${s.canary.revision} at ${s.canary.weight}%` : null);

export async function deployList(ctx: Context, flags: { env?: Environment; status?: string; json?: boolean }): Promise<void> {
  const services: Service[] = [];
  for (const env of flags.env ? [flags.env] : ENVIRONMENTS) {
    const q = (paging: Record<string, string>) => new URLSearchParams({ env, ...paging, ...(flags.status ? { status: flags.status } : {}) });
    services.push(...(await allPages<Service>(ctx.api(), (paging) => `/v1/services?${q(paging)}`, PAGE)));
  }
  if (flags.json) return printJson(ctx.out, services);
  if (services.length === 0) return ctx.out.stdout(`no ${flags.status ? `${flags.status} ` : ''}services${flags.env ? ` in ${flags.env}` : ''}\n`);
  const rows = services.map((s) => {
    const perRevision = readyByRevision(s);
    return {
      service: s.name,
      env: s.environment,
      status: s.status,
      revision: s.current_revision,
      canary: canaryText(s),
      ready: `${s.replicas.ready}/${s.replicas.desired}${perRevision ? ` (${perRevision})` : ''}`,
      endpoint: s.endpoint,
      image: s.image,
      deployed: shortTime(s.last_deployed_at),
    };
  });
  // Why each failed rollout failed, under the table (`deploy get` shows the container's log lines too).
  const failed = services.filter((s) => s.status_message).map((s) => `${s.name} in ${s.environment} failed: ${whyFailed(s)}\n`);
  ctx.out.stdout(
    table(rows, ['service', 'env', 'status', 'revision', 'canary', 'ready', 'endpoint', 'image', 'deployed']) + (failed.length ? `\n${failed.join('')}` : ''),
  );
}

export async function deployGet(ctx: Context, name: string, flags: EnvFlag & { json?: boolean }): Promise<void> {
  const s = await ctx.api().request<ServiceDetail>('GET', serviceUrl(name, flags.env));
  if (flags.json) return printJson(ctx.out, s);
  const [, ...logLines] = failureLines(s);
  ctx.out.stdout(
    describe([
      ['service', s.name],
      ['environment', s.environment],
      ['status', stateOf(s)],
      ['failed', whyFailed(s)],
      ['revision', s.current_revision],
      ['previous', s.previous_revision],
      ['canary', canarySplit(s)],
      ['ready', readyByRevision(s)],
      ['endpoint', s.endpoint && `${s.endpoint} (with Host: ${s.name})`],
      ['image', s.image],
      ['sync', s.gitops_sync_status],
      ['runtime', s.runtime],
      ['last deployed', shortTime(s.last_deployed_at)],
    ]) + (logLines.length ? `\n${logLines.map((l) => `  ${l}\n`).join('')}` : ''),
  );
}

export async function deployHistory(ctx: Context, name: string, flags: EnvFlag & { json?: boolean }): Promise<void> {
  const revisions = await allPages<Revision>(ctx.api(), (paging) => serviceUrl(name, flags.env, '/revisions', paging), PAGE);
  if (flags.json) return printJson(ctx.out, revisions);
  // The API calls a canary's revision `available`; the table says which one is the canary.
  const { canary } = await ctx.api().request<ServiceDetail>('GET', serviceUrl(name, flags.env));
  const status = (r: Revision) => (canary?.revision === r.revision ? `canary (${canary.weight}%)` : r.status);
  const rows = revisions.map((r) => ({ revision: r.revision, status: status(r), image: r.image, deployed: shortTime(r.deployed_at), by: r.deployed_by }));
  ctx.out.stdout(table(rows, ['revision', 'status', 'image', 'deployed', 'by']));
}

export async function deployRollback(ctx: Context, name: string, flags: EnvFlag & { revision?: string; json?: boolean }): Promise<void> {
  const before = await ctx.api().request<ServiceDetail>('GET', serviceUrl(name, flags.env));
  const s = await ctx.api().request<ServiceChange>('POST', serviceUrl(name, flags.env, '/rollback', flags.revision ? { revision: flags.revision } : {}), {});
  if (flags.json) return printJson(ctx.out, s);
  const from = before.canary ? `${before.current_revision}, canary ${before.canary.revision} dropped` : before.current_revision;
  ctx.out.stdout(`rolled back ${s.name} in ${s.environment} to ${s.current_revision} (from ${from}); status: ${stateOf(s)}\n`);
}

export async function deployRemove(ctx: Context, name: string, flags: EnvFlag & { yes?: boolean; json?: boolean }): Promise<void> {
  if (!flags.yes) {
    // Asked about a service that exists, with what it runs: a typo fails before the question.
    const s = await ctx.api().request<ServiceDetail>('GET', serviceUrl(name, flags.env));
    await confirm(
      `delete service ${name} from ${flags.env}`,
      `Its ${s.replicas.desired} replicas of ${s.current_revision} stop and its revisions are forgotten`,
      flags.yes,
    );
  }
  const gone = await ctx.api().request<ServiceDeleted>('DELETE', serviceUrl(name, flags.env));
  if (flags.json) return printJson(ctx.out, gone);
  ctx.out.stdout(`deleted service ${gone.name} from ${gone.environment}\n`);
}

/** The canary state as a table of its two tracks. */
function printCanary(ctx: Context, c: CanaryState, said: string): void {
  const tracks = [{ track: 'stable', ...c.stable }, ...(c.canary ? [{ track: 'canary', ...c.canary }] : [])];
  ctx.out.stdout(
    `${said}\n${table(
      tracks.map((t) => ({ ...t, weight: `${t.weight}%` })),
      ['track', 'revision', 'weight', 'image'],
    )}`,
  );
}

export async function canaryGet(ctx: Context, name: string, flags: EnvFlag & { json?: boolean }): Promise<void> {
  const c = await ctx.api().request<CanaryState>('GET', serviceUrl(name, flags.env, '/canary'));
  if (flags.json) return printJson(ctx.out, c);
  const said = c.canary
    ? `${c.service} in ${c.environment}: canary ${c.canary.revision} takes ${c.canary.weight}% of traffic${c.canary.weight === 0 ? ' (halted)' : ''}`
    : `${c.service} in ${c.environment} has no canary: ${c.stable.revision} takes all traffic`;
  printCanary(ctx, c, said);
}

const SAID = {
  weight: (c: CanaryState, weight: number) =>
    c.canary
      ? `canary ${c.canary.revision} of ${c.service} in ${c.environment} now takes ${weight}% of traffic`
      : `promoted ${c.stable.revision} of ${c.service} in ${c.environment}: it takes all traffic`,
  halt: (c: CanaryState) => `halted canary ${c.canary?.revision} of ${c.service} in ${c.environment}: all traffic goes to ${c.stable.revision}`,
};

export async function canaryWeight(ctx: Context, name: string, weight: number, flags: EnvFlag & { json?: boolean }): Promise<void> {
  const c = await ctx.api().request<CanaryState>('PUT', serviceUrl(name, flags.env, '/canary/weight'), { weight });
  if (flags.json) return printJson(ctx.out, c);
  printCanary(ctx, c, weight === 0 ? SAID.halt(c) : SAID.weight(c, weight));
}

export async function canaryHalt(ctx: Context, name: string, flags: EnvFlag & { json?: boolean }): Promise<void> {
  const c = await ctx.api().request<CanaryState>('POST', serviceUrl(name, flags.env, '/canary/halt'));
  if (flags.json) return printJson(ctx.out, c);
  printCanary(ctx, c, SAID.halt(c));
}

export async function canaryPromote(ctx: Context, name: string, flags: EnvFlag & { json?: boolean }): Promise<void> {
  const s = await ctx.api().request<ServiceChange>('POST', serviceUrl(name, flags.env, '/canary/promote'));
  if (flags.json) return printJson(ctx.out, s);
  ctx.out.stdout(
    `promoted ${s.current_revision} of ${s.name} in ${s.environment}: it takes all traffic (previous: ${s.previous_revision ?? '-'}); status: ${stateOf(s)}\n`,
  );
}
