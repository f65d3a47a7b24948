/**
 * The agent's `TETHER_*` variables (cmd/agent-main.ts, cmd/settings-names.ts): a name no tether
 * command reads stops the real agent process with a did-you-mean; another command's settings
 * (the server's, the CLI's TETHER_TOKEN) do not, as a device may run those commands too.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runTether } from '../../helpers/processes';
import { startStack, type Stack } from '../../helpers/stack';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(() => stack.stop());

describe('the agent and the TETHER_ variables of its environment', () => {
  it('refuses a misspelled one, naming it and the setting it resembles', async () => {
    const run = await runTether(['agent', '--server', stack.url, '--device-id', 'set-typo'], { TETHER_DEVICE_TOKN: 'tdev_x', TETHER_FILES_ROT: '/srv' });
    expect(run.code).toBe(2);
    expect(run.stderr).toBe(
      'tether: invalid agent settings:\n' +
        '  TETHER_DEVICE_TOKN: unknown setting; did you mean TETHER_DEVICE_TOKEN?\n' +
        '  TETHER_FILES_ROT: unknown setting; did you mean TETHER_FILES_ROOT?',
    );
    // The value of a misspelled token is not repeated anywhere.
    expect(run.stderr).not.toContain('tdev_x');
  });

  it("says that TETHER_TOKEN is the CLI's when the agent has no token of its own", async () => {
    const run = await runTether(['agent', '--server', stack.url, '--device-id', 'set-cli'], { TETHER_TOKEN: 'tok_user' });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("token: is required (--token T or TETHER_DEVICE_TOKEN); TETHER_TOKEN is the tether command's (a user's), not the agent's");
  });

  it("runs beside the server's and the CLI's settings", async () => {
    const token = await stack.addDevice('set-shared');
    const agent = stack.startAgent('set-shared', token, { TETHER_TOKEN: 'tok_user', TETHER_LISTEN: '127.0.0.1:0', TETHER_DATA_DIR: '/nowhere' });
    await stack.waitForStatus('set-shared', 'online');
    expect(agent.stderr.join('\n')).not.toMatch(/invalid agent settings/);
  });
});
