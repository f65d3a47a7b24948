/**
 * The set-up of the tests of `tether forward --stdio` (forward-stdio, ssh): a real stack with one
 * online device, an engineer's token, and a config directory of the file's own, so the detached
 * masters its commands start are found (and stopped) by this file alone.
 */
import { runDirOf, stopMasters } from './forward-masters';
import { startStack, tempDir, type Stack } from './stack';

export interface ForwardSession {
  session_id: string;
  status: string;
  targets: string[];
}

/** Made at import (the directories), started in `beforeAll` (`start`), stopped in `afterAll` (`stop`). */
export function forwardStack(device: string, username: string, configPrefix: string) {
  const config = tempDir(configPrefix);
  const runDir = runDirOf(config);
  let stack: Stack | undefined;
  let token: string | undefined;
  const started = () => {
    if (!stack) throw new Error('forwardStack: start() it first');
    return stack;
  };
  return {
    /** XDG_CONFIG_HOME of the commands; their masters' sockets and logs are in `runDir`. */
    config,
    runDir,
    /** Starts the stack, makes `username` a platform engineer with a token, and brings `device` online. */
    async start(): Promise<Stack> {
      stack = await startStack();
      token = await stack.userToken(username, 'platform-engineer');
      await stack.onlineDevice(device);
      return stack;
    },
    /** The environment of a tether command of the test (no XDG_RUNTIME_DIR: the sockets go under `config`). */
    env: () => ({ TETHER_SERVER: started().url, TETHER_TOKEN: token, XDG_CONFIG_HOME: config, XDG_RUNTIME_DIR: undefined }),
    /** The device's port-forward sessions, whatever their status. */
    async forwardSessions(): Promise<ForwardSession[]> {
      const res = await started().admin.get(`/v1/remote-access/sessions?device_id=${device}&protocol=port-forward&per_page=200`);
      return res.body.data;
    },
    /** Stops the masters still running (they close their sessions), then the stack. */
    async stop(): Promise<void> {
      await stopMasters(runDir);
      await stack?.stop();
    },
  };
}
