/** @module The agent's command-line options, shared by `tether agent` and the agent bundle. */
import type { Command } from 'commander';
import type { AgentFlags } from '../agent/config';

export function addAgentOptions(cmd: Command): Command {
  return cmd
    .option('--server <url>', 'broker URL (env TETHER_SERVER)')
    .option('--device-id <id>', 'this device\'s id (env TETHER_DEVICE_ID)')
    .option('--token <token>', 'agent token; prefer the environment (env TETHER_DEVICE_TOKEN)')
    .option('--files-root <dir>', 'file transfer never reaches outside it (env TETHER_FILES_ROOT; default: working dir)')
    .option('--log-dirs <dirs>', 'colon-separated dirs log.tail may read (env TETHER_LOG_DIRS; default /var/log)')
    .option('--max-sessions <n>', 'streams served at once (env TETHER_MAX_SESSIONS; default 16)')
    .option('--max-upload-bytes <n>', 'largest upload accepted, 0 = no limit (env TETHER_MAX_UPLOAD_BYTES; default 0)')
    .option('--state-dir <dir>', 'where the agent keeps its own files (env TETHER_STATE_DIR; default ~/.local/state/tether-agent)')
    .option('--no-warm-shell', 'do not keep a login shell started for the next shell session (env TETHER_WARM_SHELL=0)');
}

export const agentFlagsOf = (o: Record<string, string | boolean | undefined>): AgentFlags => ({
  server: o.server as string | undefined,
  deviceId: o.deviceId as string | undefined,
  token: o.token as string | undefined,
  filesRoot: o.filesRoot as string | undefined,
  logDirs: o.logDirs as string | undefined,
  maxSessions: o.maxSessions as string | undefined,
  maxUploadBytes: o.maxUploadBytes as string | undefined,
  stateDir: o.stateDir as string | undefined,
  // commander sets warmShell to true unless --no-warm-shell: only the explicit "no" is a flag
  warmShell: o.warmShell === false ? '0' : undefined,
});
