/**
 * @module A device's new agent token, shown this once (registering or rotating), with the two
 * ways to start the agent with it: the package's /etc/tether/agent.env, and a command line. The
 * server URL is the console's own origin, which is where agents reach the broker too.
 */
import { copyButton, h } from '../../dom';
import { secretOnce } from '../../form';

/** The lines of /etc/tether/agent.env for the packaged agent (its systemd unit reads them). */
export const agentEnvFile = (server: string, deviceId: string, agentToken: string) =>
  `TETHER_SERVER=${server}\nTETHER_DEVICE_ID=${deviceId}\nTETHER_DEVICE_TOKEN=${agentToken}\n`;

/** One command line; the token goes in the environment, not a flag (flags show in `ps`). */
export const agentCommand = (server: string, deviceId: string, agentToken: string) =>
  `TETHER_DEVICE_TOKEN=${agentToken} tether agent --server ${server} --device-id ${deviceId}`;

/** The card: `what` says why there is a new token ("registered", "has a new agent token"). */
export function agentSetupCard(deviceId: string, agentToken: string, what: string): HTMLElement {
  const server = location.origin;
  const env = agentEnvFile(server, deviceId, agentToken);
  const command = agentCommand(server, deviceId, agentToken);
  return h(
    'section',
    { class: 'card secret', id: 'agent-setup', 'aria-live': 'polite', 'data-device': deviceId },
    h('h2', {}, `${deviceId} ${what}`),
    h('p', {}, h('strong', {}, 'The agent token is shown this once.'), ' Copy it now: the server keeps only its hash.'),
    secretOnce('agent-token', agentToken, 'Copy token'),
    h(
      'p',
      {},
      'With the tether package: put these lines in ',
      h('code', {}, '/etc/tether/agent.env'),
      ', then ',
      h('code', {}, 'sudo systemctl restart tether-agent'),
      '.',
    ),
    h('pre', { class: 'log', id: 'agent-env' }, env),
    h('div', { class: 'actions' }, copyButton(env, 'Copy agent.env')),
    h('p', {}, 'Or run the agent yourself:'),
    h('pre', { class: 'log', id: 'agent-command' }, command),
    h('div', { class: 'actions' }, copyButton(command, 'Copy command')),
  );
}
