/**
 * @module The client commands of `tether` (docs/cli.md), registered on a commander program.
 * Each action resolves with the process exit code.
 */
import { Command, InvalidArgumentError, Option } from 'commander';
import type { Context } from './context';
import { DIAG_OPS } from './diag-ops';
import { registerAccountCommands } from './register-accounts';
import { registerPlatformCommands } from './register-platform';

// Each command's module (ws, tar, progress bars) loads only when that command runs.
const commands = {
  cp: () => import('./commands/cp'),
  diag: () => import('./commands/diag'),
  forward: () => import('./commands/forward'),
  play: () => import('./commands/play'),
  session: () => import('./commands/session'),
  shell: () => import('./commands/shell'),
};

const PROTOCOLS = ['diagnostics', 'shell', 'file-transfer', 'port-forward'];

function positive(name: string, max: number) {
  return (value: string) => {
    const n = Number(value);
    if (!/^\d+(\.\d+)?$/.test(value) || !(n > 0) || n > max) throw new InvalidArgumentError(`${name} must be a number above 0, at most ${max}`);
    return n;
  };
}

function integer(name: string, min: number, max: number) {
  return (value: string) => {
    const n = Number(value);
    if (!/^\d+$/.test(value) || n < min || n > max) throw new InvalidArgumentError(`${name} must be a whole number from ${min} to ${max}`);
    return n;
  };
}

const CP_HELP = `
Device paths are relative to the agent's files root (its --files-root, TETHER_FILES_ROOT;
default: the agent's working directory). \`/\` means the files root itself, so
laptop:/srv/app is ROOT/srv/app; nothing outside the files root can be reached.

Examples:
  tether cp ./build laptop:/              upload into the files root: ROOT/build
  tether cp app.conf laptop:etc/app.conf  upload to ROOT/etc/app.conf
  tether cp laptop:/logs/today.log .      download ROOT/logs/today.log to here
`;

const FORWARD_HELP = `
Each forward is [BIND_ADDR:]LOCAL_PORT:REMOTE_HOST:REMOTE_PORT, as ssh -L writes it: connections
to BIND_ADDR:LOCAL_PORT (default 127.0.0.1; port 0 picks a free one) reach REMOTE_HOST:REMOTE_PORT
as the device sees it. IPv6 addresses go in brackets. The device's agent forwards only where its
--forward-allow lets it (by default, its own loopback). Ctrl-C closes the session.

Examples:
  tether forward db-box 15432:127.0.0.1:5432        the device's PostgreSQL on localhost:15432
  tether forward cam-7 8080:localhost:80 2222:127.0.0.1:22
  tether forward gw 0.0.0.0:9000:10.0.0.5:9000      a host on the device's network, for the LAN
`;

const replaceOption = () => new Option('--replace', 'close an open session of the same protocol on the device first');
const waitOption = () => new Option('--wait-online', "wait for the device's agent to come online");

/** Adds the client commands; `setExit` receives each command's exit code. */
export function registerClientCommands(program: Command, ctx: () => Context, setExit: (code: number) => void): void {
  registerAccountCommands(program, ctx);

  const session = program.command('session').description('open, list and close remote-access sessions');
  session
    .command('open <device>')
    .description('open a session on a device')
    .addOption(new Option('--protocol <protocol>', 'what the session allows').choices(PROTOCOLS).makeOptionMandatory())
    .option('--ttl <seconds>', 'time to live, 60 to 28800 (default 3600)', integer('--ttl', 60, 28800))
    .option('--target <host:port...>', 'port-forward: where its connections may go (1 to 8)')
    .option('--json', 'print the session as JSON')
    .addOption(replaceOption())
    .addOption(waitOption())
    .action(async (device, o) => (await commands.session()).sessionOpen(ctx(), device, o));
  session
    .command('play <session-id>')
    .description("replay a shell session's recording in this terminal (space pauses, q stops), or save it with --cast")
    .option('--speed <factor>', 'play faster (2) or slower (0.5)', positive('--speed', 100))
    .option('--idle-limit <seconds>', 'shorten every pause longer than this to this', positive('--idle-limit', 3600))
    .option('--cast <file>', 'save the recording as an asciicast v2 file instead of playing it')
    .action(async (id, o) => setExit(await (await commands.play()).sessionPlay(ctx(), id, o)));
  session
    .command('list')
    .description('list sessions (yours; all of them for administrators)')
    .option('--device <id>', 'only this device')
    .addOption(new Option('--status <status>', 'only open or closed ones').choices(['open', 'closed']))
    .addOption(new Option('--protocol <protocol>', 'only this protocol').choices(PROTOCOLS))
    .option('--recorded', 'only sessions with a recording (tether session play ID)')
    .option('--json', 'print the sessions as JSON')
    .action(async (o) => (await commands.session()).sessionList(ctx(), o));
  session
    .command('close <session-id>')
    .description('close a session now')
    .option('--json', 'print the closed session as JSON')
    .action(async (id, o) => (await commands.session()).sessionClose(ctx(), id, o));

  program
    .command('shell <device>')
    .description("an interactive shell on a device; exits with the remote shell's exit code")
    .option('--ttl <seconds>', 'session time to live, 60 to 28800', integer('--ttl', 60, 28800))
    .addOption(replaceOption())
    .addOption(waitOption())
    .action(async (device, o) => setExit(await (await commands.shell()).shell(ctx(), device, o)));

  program
    .command('forward <device> <forwards...>')
    .description('forward local TCP ports to the device or its network, like ssh -L; runs until Ctrl-C')
    .option('--ttl <seconds>', 'session time to live, 60 to 28800', integer('--ttl', 60, 28800))
    .option('--json', 'print the session, with the address each forward listens on, as JSON')
    .addOption(replaceOption())
    .addOption(waitOption())
    .addHelpText('after', FORWARD_HELP)
    .action(async (device, forwards, o) => setExit(await (await commands.forward()).forward(ctx(), device, forwards, o)));

  program
    .command('diag <device> [op]')
    .description(`a summary of the device, or one diagnostics op (${Object.keys(DIAG_OPS).join(', ')})`)
    .option('--json', 'print the results as JSON')
    .option('--path <path>', "log.tail: the log file (absolute, inside the device's log dirs)")
    .option('--lines <n>', 'log.tail: how many lines', integer('--lines', 1, 10_000))
    .option('--limit <n>', 'process.list: how many processes', integer('--limit', 1, 10_000))
    .addOption(replaceOption())
    .addOption(waitOption())
    .action(async (device, op, o) => (await commands.diag()).diag(ctx(), device, op, o));

  program
    .command('cp <src> <dst>')
    .description('copy files or directories to or from a device; write DEVICE:PATH on one side')
    .option('--no-progress', 'no progress bar, even on a terminal')
    .addOption(replaceOption())
    .addOption(waitOption())
    .addHelpText('after', CP_HELP)
    .action(async (src, dst, o) => (await commands.cp()).cp(ctx(), src, dst, { ...o, progress: o.progress === false ? false : undefined }));

  registerPlatformCommands(program, ctx);
}
