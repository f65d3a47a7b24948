/** @module `tether device add`: registers a device and says how to start its agent. */
import { ApiFailure } from '../api-client';
import type { Context } from '../context';
import { CliError, usageError } from '../errors';
import { printJson } from '../output';

export async function deviceAdd(ctx: Context, deviceId: string, flags: { json?: boolean; label?: string[] }): Promise<void> {
  const labels: Record<string, string> = {};
  for (const l of flags.label ?? []) {
    const at = l.indexOf('=');
    if (at <= 0) throw usageError(`--label takes key=value, not ${l}`);
    labels[l.slice(0, at)] = l.slice(at + 1);
  }
  let created: { device_id: string; agent_token: string };
  try {
    created = await ctx.api().request('POST', '/v1/devices', { device_id: deviceId, labels });
  } catch (err) {
    if (err instanceof ApiFailure && err.status === 409) throw new CliError(`device ${deviceId} already exists`, err.code);
    throw err;
  }
  if (flags.json) return printJson(ctx.out, created);
  const server = ctx.api().server;
  ctx.out.stdout(
    `registered device ${created.device_id}. Its agent token (shown only this once):\n\n` +
      `  ${created.agent_token}\n\n` +
      'Start the agent on the device with:\n\n' +
      `  TETHER_DEVICE_TOKEN=${created.agent_token} tether agent --server ${server} --device-id ${created.device_id}\n\n` +
      'or, with the single-file bundle (dist/tether-agent.js, node-pty beside it):\n\n' +
      `  TETHER_DEVICE_TOKEN=${created.agent_token} node tether-agent.js --server ${server} --device-id ${created.device_id}\n`,
  );
}
