/**
 * @module The client commands of `tether` (docs/cli.md), registered on a commander program.
 * Each action resolves with the process exit code.
 */
import { Command, InvalidArgumentError, Option } from 'commander';
import type { Context } from './context';
import { DIAG_OPS } from './diag-ops';
import { registerAccessCommands } from './register-access';
import { registerAccountCommands } from './register-accounts';
import { registerJobCommands } from './register-jobs';
import { registerPlatformCommands } from './register-platform';

// Each command's module (ws, tar, progress bars) loads only when that command runs.
const commands = {
  cp: () => import('./commands/cp'),
  diag: () => import('./commands/diag'),
  exec: () => import('./commands/exec'),
  forward: () => import('./commands/forward'),
  forwardMaster: () => import('./commands/forward-master'),
  play: () => import('./commands/play'),
  session: () => import('./commands/session'),
  shell: () => import('./commands/shell'),
  sshConfig: () => import('./commands/ssh-config'),
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

const EXTEND_HELP = `
Sessions open for 3600 s unless --ttl says otherwise (60 to 28800). Before a session ends, its
stream's client is warned (5 and 1 minute before: tether shell prints it). Extending sets its end
to --ttl seconds from now, for its owner or an administrator, as long as it lives no more than
28800 s from its opening in all; past that the server says the most it may be extended by now.

Example:
  tether session extend sess-… --ttl 3600     one more hour from now
`;

const CP_HELP = `
The copy's session has the default time to live (3600 s) and is closed when the copy ends.

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

With --stdio and one HOST:PORT, standard input and output are one connection to HOST:PORT on the
device, for ssh (tether ssh-config prints the Host blocks; docs/ssh.md):
  ssh -o ProxyCommand='tether forward --stdio %h 127.0.0.1:22' user@laptop
Connections of --stdio share one session per device, held by a background process that closes it
--persist seconds (default 10) after the last one ends. Exit codes: 0 a clean end, 255 the
connection to tether lost or never made (as ssh's), 1 other failures, 2 usage.
`;

const EXEC_HELP = `
A command runs without a shell or a terminal, in the home directory of the agent's user, with
the environment its shell gets (without TERM): write \`sh -c '…'\` for pipes, globs or variables.
Its stdout and stderr arrive apart; our stdin goes to its stdin (-n: none). The exit code is the
command's (128 + N when signal N killed it); 255 when the connection was lost before it ended;
1 or 2 for tether's own failures. Ctrl-C closes the session, which ends the command (exit 130).
It opens a shell session: a device has one open shell session at a time.

Examples:
  tether exec laptop uname -a
  tether exec laptop -- ls -la /tmp
  tether shell laptop -- sh -c 'df -h | grep /dev/sd'
  tar c ./site | tether exec laptop tar x -C /srv
`;

/** What --ttl takes, with the defaults (shared/api/sessions.ts; tether session extend). */
const TTL_HELP = 'session time to live in seconds, 60 to 28800 (default 3600); tether session extend ID --ttl S adds time, up to 28800 s in all';

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
    .option('--ttl <seconds>', TTL_HELP, integer('--ttl', 60, 28800))
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
  session
    .command('extend <session-id>')
    .description('extend an open session: it then ends --ttl seconds from now; prints the new expiry')
    .addOption(
      new Option('--ttl <seconds>', 'seconds from now, 60 to 28800; its whole life (from its opening) stays within 28800')
        .argParser(integer('--ttl', 60, 28800))
        .makeOptionMandatory(),
    )
    .option('--json', 'print the session as JSON')
    .addHelpText('after', EXTEND_HELP)
    .action(async (id, o) => (await commands.session()).sessionExtend(ctx(), id, o));

  program
    .command('shell <device> [command...]')
    .description("an interactive shell on a device; exits with the remote shell's exit code. With -- CMD ARGS…: runs that command instead, as tether exec")
    .option('--ttl <seconds>', TTL_HELP, integer('--ttl', 60, 28800))
    .option('-n, --no-stdin', 'with a command: send it no input (it reads end-of-file), as ssh -n')
    .addOption(replaceOption())
    .addOption(waitOption())
    .addHelpText('after', EXEC_HELP)
    .action(async (device, command: string[], o) =>
      setExit(command.length > 0 ? await (await commands.exec()).exec(ctx(), device, command, o) : await (await commands.shell()).shell(ctx(), device, o)),
    );

  // Options go before DEVICE: everything after it is the command, as with ssh.
  program.enablePositionalOptions();
  program
    .command('exec <device> <command...>')
    .description("run one command on a device without a terminal, like ssh HOST CMD; exits with the command's exit code (255: connection lost)")
    .option('--ttl <seconds>', TTL_HELP, integer('--ttl', 60, 28800))
    .option('-n, --no-stdin', 'send the command no input (it reads end-of-file), as ssh -n')
    .addOption(replaceOption())
    .addOption(waitOption())
    .passThroughOptions()
    .addHelpText('after', EXEC_HELP)
    .action(async (device, command: string[], o) => setExit(await (await commands.exec()).exec(ctx(), device, command, o)));

  program
    .command('forward <device> <forwards...>')
    .description('forward local TCP ports to the device or its network, like ssh -L; runs until Ctrl-C')
    .option('--ttl <seconds>', TTL_HELP, integer('--ttl', 60, 28800))
    .option('--json', 'print the session, with the address each forward listens on, as JSON')
    .option('-q, --quiet', 'print no "forwarding …" lines (errors still print)')
    .option('--stdio', 'join standard input and output to one connection to HOST:PORT (ssh ProxyCommand)')
    .option('--persist <seconds>', '--stdio: keep the shared session this long after its last connection (default 10)', integer('--persist', 0, 3600))
    .addOption(replaceOption())
    .addOption(waitOption())
    .addHelpText('after', FORWARD_HELP)
    .action(async (device, forwards, o) => setExit(await (await commands.forward()).forward(ctx(), device, forwards, o)));
  program
    .command('forward-master <device>', { hidden: true })
    .description('the background process that holds the session of `forward --stdio` connections (started by them)')
    .requiredOption('--persist <seconds>', 'close the session this long after the last connection', integer('--persist', 0, 3600))
    .option('--ttl <seconds>', 'session time to live, 60 to 28800', integer('--ttl', 60, 28800))
    .addOption(replaceOption())
    .addOption(waitOption())
    .action(async (device, o) => setExit(await (await commands.forwardMaster()).forwardMaster(ctx(), device, o)));

  program
    .command('ssh-config [devices...]')
    .description("print ssh_config Host blocks that reach devices' sshd through tether (all your devices when none is named)")
    .option('--user <name>', 'the login name on the devices (User)')
    .option('--port <port>', "the devices' sshd port (default 22)", integer('--port', 1, 65535))
    .option('--host <host>', "where the device's agent connects for sshd (default 127.0.0.1)")
    .option('--prefix <prefix>', 'put before each device id in Host: --prefix tether- gives `ssh tether-laptop`')
    .option('--ttl <seconds>', 'time to live of the sessions ssh opens, 60 to 28800', integer('--ttl', 60, 28800))
    .action(async (devices, o) => (await commands.sshConfig()).sshConfig(ctx(), devices, o));

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
    .option('-r, --recursive', 'accepted for the habit of cp and scp: directories are always copied whole')
    .addOption(replaceOption())
    .addOption(waitOption())
    .addHelpText('after', CP_HELP)
    .action(async (src, dst, o) => (await commands.cp()).cp(ctx(), src, dst, { ...o, progress: o.progress === false ? false : undefined }));

  registerJobCommands(program, ctx, setExit);
  registerAccessCommands(program, ctx, setExit);
  registerPlatformCommands(program, ctx);
}
