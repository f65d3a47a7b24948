/**
 * @module `tether deploy apply`: sends a service spec and says what it changed (revision, image,
 * replicas, canary), or with `--dry-run` what it would change; an invalid spec prints every
 * problem with its path and line, as the API reports them. `--wait` follows the rollout.
 */
import { readFile } from 'node:fs/promises';
import { parse } from 'yaml';
import type { Service, ServiceChange, ServiceDetail } from '../../../shared/api/services';
import { ApiFailure } from '../../api-client';
import type { Context } from '../../context';
import { describe } from '../../describe';
import { CliError } from '../../errors';
import { printJson } from '../../output';
import { serviceOrNull, serviceUrl, stateOf, whyFailed, type EnvFlag } from './service';

export interface ApplyFlags extends EnvFlag {
  file: string;
  dryRun?: boolean;
  wait?: boolean;
  timeout?: number;
  json?: boolean;
}

/** What the summary needs of the spec, read here before it is sent; absent when the file does not parse. */
interface SpecFacts {
  name?: string;
  image?: string;
}

async function readSpec(file: string): Promise<string> {
  if (file === '-') {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  }
  try {
    return await readFile(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new CliError(`cannot read ${file}: ${code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'a directory' : (err as Error).message}`, 'local_file');
  }
}

/** The name and image of a spec; the server judges the spec, this only reads what it can. */
function factsOf(yaml: string): SpecFacts {
  try {
    const doc = parse(yaml) as { service?: { name?: unknown; image?: unknown } } | null;
    const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
    return { name: str(doc?.service?.name), image: str(doc?.service?.image) };
  } catch {
    return {};
  }
}

/** `PATH: message (line N)`, one a line, under a line saying how many. */
function invalidSpec(file: string, err: ApiFailure): CliError {
  const problems = err.body.details ?? [];
  const lines = problems.map((p) => `  ${p.path}: ${p.message}${p.line ? ` (line ${p.line})` : ''}`);
  const count = problems.length === 1 ? '1 problem' : `${problems.length} problems`;
  return new CliError(
    [`${file === '-' ? 'the spec on standard input' : file} is not a valid service spec, ${count} (invalid_spec):`, ...lines].join('\n'),
    err.code,
  );
}

/** `from -> to`, or `to (unchanged)`. */
const change = (from: string | number | undefined, to: string | number) =>
  from === undefined || from === to ? `${to}${from === undefined ? '' : ' (unchanged)'}` : `${from} -> ${to}`;

/** The lines saying what the apply changed, or would change, compared with `before`. */
function changes(before: Service | null | undefined, after: Service, facts: SpecFacts): string {
  const revision = after.canary?.revision ?? after.current_revision;
  const image = facts.image ?? (after.canary ? undefined : after.image);
  const rows: Array<[string, string | undefined]> = [
    ['revision', before === null ? `${revision} (a new service)` : change(before?.current_revision, revision)],
    ['image', image && change(before?.image, image)],
    ['replicas', change(before?.replicas.desired, after.replicas.desired)],
    [
      'traffic',
      after.canary
        ? `canary: ${after.canary.weight}% to ${after.canary.revision}, ${100 - after.canary.weight}% stays on ${after.current_revision}`
        : `all to ${after.current_revision} as its replicas become ready (rolling)`,
    ],
  ];
  return describe(rows).replace(/^(?=.)/gm, '  ');
}

/** Polls the service until its rollout ends: healthy resolves, failed (or the time running out) rejects. */
async function followRollout(ctx: Context, s: ServiceChange, timeoutMs: number): Promise<ServiceDetail> {
  const deadline = Date.now() + timeoutMs;
  const cmd = (what: string) => `tether deploy ${what} ${s.name} --env ${s.environment}`;
  let said = '';
  for (;;) {
    const now = await ctx.api().request<ServiceDetail>('GET', serviceUrl(s.name, s.environment));
    if (stateOf(now) !== said) ctx.notice((said = stateOf(now)));
    if (now.status === 'healthy') return now;
    if (now.status === 'failed')
      throw new CliError(
        `the rollout of ${s.name} in ${s.environment} failed (${stateOf(now)})${now.status_message ? `: ${whyFailed(now)}` : ''}; ` +
          `\`${cmd('get')}\` shows why, \`${cmd('rollback')}\` goes back`,
        'failed',
      );
    if (Date.now() > deadline) throw new CliError(`${s.name} in ${s.environment} is still ${stateOf(now)} after ${timeoutMs / 1000} s`, 'timeout');
    await new Promise((r) => setTimeout(r, 250));
  }
}

export async function deployApply(ctx: Context, flags: ApplyFlags): Promise<void> {
  const yaml = await readSpec(flags.file);
  const facts = factsOf(yaml);
  // What it replaces, for the summary; undefined when that cannot be known (no name, no right to read).
  const before = facts.name ? await serviceOrNull(ctx, facts.name, flags.env).catch(() => undefined) : undefined;
  let after: ServiceChange;
  try {
    after = await ctx.api().request<ServiceChange>('POST', `/v1/services?${new URLSearchParams({ env: flags.env, dry_run: String(!!flags.dryRun) })}`, yaml, {
      contentType: 'application/yaml',
    });
  } catch (err) {
    if (err instanceof ApiFailure && err.code === 'invalid_spec') throw invalidSpec(flags.file, err);
    throw err;
  }
  if (flags.dryRun) {
    if (flags.json) return printJson(ctx.out, after);
    return ctx.out.stdout(
      `dry run: the spec is valid; nothing was changed. Applying it to ${after.environment} would deploy ${after.name}:\n${changes(before, after, facts)}`,
    );
  }
  const cmd = (what: string) => `tether deploy ${what} ${after.name} --env ${after.environment}`;
  if (!flags.json) {
    const next = after.canary ? `promote the canary once it is ready with \`${cmd('canary promote')}\`` : `follow it with \`${cmd('get')}\``;
    ctx.out.stdout(
      `applied ${after.name} to ${after.environment}:\n${changes(before, after, facts)}status: ${stateOf(after)}${flags.wait ? '' : `; ${next}`}\n`,
    );
  }
  const done = flags.wait ? await followRollout(ctx, after, (flags.timeout ?? 600) * 1000) : after;
  if (flags.json) printJson(ctx.out, done);
}
