/**
 * @module `tether device add | list | show | rm | rotate-token`: the device registry
 * (docs/http-api.md, endpoints) and the agent tokens that let devices in.
 */
import type { AgentTokenIssued, Device, DeviceCreated, DeviceDeleted } from '../../shared/api/devices';
import { allPages, ApiFailure } from '../api-client';
import { confirm } from '../confirm';
import type { Context } from '../context';
import { describe } from '../describe';
import { CliError, usageError } from '../errors';
import { printJson, table } from '../output';

const shortTime = (iso: string | null) => (iso ? iso.replace(/\.\d+Z$/, 'Z') : null);
const deviceUrl = (id: string) => `/v1/devices/${encodeURIComponent(id)}`;
const labelsText = (labels: Record<string, string>) =>
  Object.entries(labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(',') || null;

/** The agent token, shown once, and the commands that start the device's agent with it. */
function printAgentToken(ctx: Context, said: string, t: AgentTokenIssued): void {
  const server = ctx.api().server;
  ctx.out.stdout(
    `${said} (shown only this once):\n\n` +
      `  ${t.agent_token}\n\n` +
      'On a device with the tether-agent package (README, installing the agent), put these lines in\n' +
      '/etc/tether/agent.env, then run `sudo systemctl enable --now tether-agent` (or restart it):\n\n' +
      `  TETHER_SERVER=${server}\n  TETHER_DEVICE_ID=${t.device_id}\n  TETHER_DEVICE_TOKEN=${t.agent_token}\n\n` +
      'or start the agent by hand:\n\n' +
      `  TETHER_DEVICE_TOKEN=${t.agent_token} tether agent --server ${server} --device-id ${t.device_id}\n`,
  );
}

export async function deviceAdd(ctx: Context, deviceId: string, flags: { json?: boolean; label?: string[] }): Promise<void> {
  const labels: Record<string, string> = {};
  for (const l of flags.label ?? []) {
    const at = l.indexOf('=');
    if (at <= 0) throw usageError(`--label takes key=value, not ${l}`);
    labels[l.slice(0, at)] = l.slice(at + 1);
  }
  let created: DeviceCreated;
  try {
    created = await ctx.api().request('POST', '/v1/devices', { device_id: deviceId, labels });
  } catch (err) {
    if (err instanceof ApiFailure && err.status === 409) throw new CliError(`device ${deviceId} already exists`, err.code);
    throw err;
  }
  if (flags.json) return printJson(ctx.out, created);
  printAgentToken(ctx, `registered device ${created.device_id}. Its agent token`, created);
}

export async function deviceList(ctx: Context, flags: { status?: string; json?: boolean }): Promise<void> {
  const status: Record<string, string> = flags.status ? { agent_status: flags.status } : {};
  const devices = await allPages<Device>(ctx.api(), (paging) => `/v1/devices?${new URLSearchParams({ ...paging, ...status })}`);
  if (flags.json) return printJson(ctx.out, devices);
  if (devices.length === 0) return ctx.out.stdout(flags.status ? `no ${flags.status} devices\n` : 'no devices; add one with `tether device add ID`\n');
  const rows = devices.map((d) => ({
    device: d.device_id,
    status: d.agent_status,
    'last seen': shortTime(d.last_seen_at),
    agent: d.agent_version,
    labels: labelsText(d.labels),
  }));
  ctx.out.stdout(table(rows, ['device', 'status', 'last seen', 'agent', 'labels']));
}

export async function deviceShow(ctx: Context, deviceId: string, flags: { json?: boolean }): Promise<void> {
  const d = await ctx.api().request<Device>('GET', deviceUrl(deviceId));
  if (flags.json) return printJson(ctx.out, d);
  ctx.out.stdout(
    describe([
      ['device', d.device_id],
      ['status', d.agent_status],
      ['last seen', shortTime(d.last_seen_at) ?? 'never'],
      ['agent version', d.agent_version],
      ['labels', labelsText(d.labels)],
      ['forwards to', d.forward_allow === null ? 'nothing (its agent forwards no ports)' : d.forward_allow.join(', ')],
      ['registered', shortTime(d.created_at)],
    ]),
  );
}

export async function deviceRemove(ctx: Context, deviceId: string, flags: { yes?: boolean; json?: boolean }): Promise<void> {
  if (!flags.yes) {
    // Asked about a device that exists, with its state: a typo fails before the question.
    const d = await ctx.api().request<Device>('GET', deviceUrl(deviceId));
    await confirm(`delete device ${deviceId}`, `Its agent (${d.agent_status}) is disconnected for good and its open sessions close`, flags.yes);
  }
  const gone = await ctx.api().request<DeviceDeleted>('DELETE', deviceUrl(deviceId));
  if (flags.json) return printJson(ctx.out, gone);
  const sessions = gone.sessions_closed === 1 ? '1 open session' : `${gone.sessions_closed} open sessions`;
  ctx.out.stdout(`deleted device ${gone.device_id}: its agent token no longer works (a connected agent was disconnected); closed ${sessions}\n`);
}

export async function deviceRotateToken(ctx: Context, deviceId: string, flags: { json?: boolean }): Promise<void> {
  const issued = await ctx.api().request<AgentTokenIssued>('POST', `${deviceUrl(deviceId)}/agent-token`, {});
  if (flags.json) return printJson(ctx.out, issued);
  printAgentToken(
    ctx,
    `issued a new agent token for ${issued.device_id}: the old one no longer works, and an agent connected with it was disconnected. The new token`,
    issued,
  );
}
