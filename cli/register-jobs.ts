/**
 * @module The `tether job …` commands (docs/cli.md, Jobs): their arguments, options and help.
 * The values are checked in the command's module (./commands/job-args) against the interface's
 * bounds, which load only when a job command runs.
 */
import { Command, InvalidArgumentError, Option } from 'commander';
import type { JobStatus } from '../shared/api/jobs';
import { withCode } from './api-client';
import type { Context } from './context';

const commands = { job: () => import('./commands/job') };

/** Every job status (a Record, so that a status added to the interface must be added here). */
const JOB_STATUS_CHOICES: Record<JobStatus, true> = { in_progress: true, completed: true, canceled: true, aborted: true };

const collect = (value: string, previous?: string[]): string[] => [...(previous ?? []), value];

/** The bounds `tether diag` puts on the same options. */
function whole(name: string, min: number, max: number) {
  return (value: string) => {
    const n = Number(value);
    if (!/^\d+$/.test(value) || n < min || n > max) throw new InvalidArgumentError(`${name} must be a whole number from ${min} to ${max}`);
    return n;
  };
}

/** TARGET, RATE, --detach and --json: what run, diag and push share. */
function addCreateOptions(cmd: Command): Command {
  return cmd
    .option('--device <device>', 'a device to run on (repeat for more)', collect)
    .option('--group <group>', 'the devices of a fleet group (id grp_… or name)')
    .option('--tenant <tenant>', "with --group: the group's tenant (default: the token's only tenant)")
    .option('--label <key=value>', 'the devices with this label (repeat: with all of them)', collect)
    .option('--max-per-minute <n>', 'start at most N a minute, evenly spaced (1 to 1000, default 60; none: no pace)')
    .option('--max-in-flight <n>', 'at most N running at once (1 to 1000, default 10)')
    .option('--abort-pct <p>', 'abort the job once P% of the ended executions failed (1 to 100)')
    .option('--abort-min <n>', 'with --abort-pct: only once N executions ended (default 10)')
    .option('--expires <seconds>', 'how long an offline device is waited for (60 to 604800, default 86400)')
    .option('--detach', 'print the job id and return at once (follow it with tether job show ID)')
    .option('--json', 'print the job and its executions as JSON once it is over (with --detach: the created job)');
}

const FOLLOW_HELP = `
TARGET is --device D (repeatable), --group G [--tenant T] or --label k=v (repeatable): one kind.
The set of devices is fixed when the job is created. Offline devices wait (--expires).

The job is followed until it is over: a progress line on stderr (done, failed, running, queued,
executions ended per minute, time so far; on a terminal one line redrawn, else a line per change),
then how it ended and a table of the executions that did not succeed, with the end of their
output. Exit 0 when every execution succeeded, 1 otherwise, 2 for a usage mistake. Ctrl-C stops
following (exit 130), not the job: tether job cancel ID stops it.`;

const RUN_HELP = `${FOLLOW_HELP}

The command runs without a shell or terminal, in each agent's files root; it succeeds on exit
code 0. Write sh -c '…' for pipes, globs or variables.

Examples:
  tether job run --group "Berlin Vans" --tenant acme -- uptime
  tether job run --label role=gateway --max-per-minute 6 --max-in-flight 2 --abort-pct 20 --abort-min 5 \\
      --timeout 120 -- systemctl restart telemetry
`;

const DIAG_HELP = `${FOLLOW_HELP}

OP is a diagnostics op (system.info, system.metrics, disk.usage, network.interfaces,
process.list, log.tail), with its options as tether diag takes them. Each device's result is
printed at the end (--json: as data).

Example:
  tether job diag --group "Berlin Vans" --tenant acme system.info
`;

const PUSH_HELP = `${FOLLOW_HELP}

FILE is uploaded once (a progress bar on a terminal), then each device writes it to PATH under
its files root, atomically, checked by size and SHA-256, with --mode (administrators).

Example:
  tether job push --label site=ber ./ca.pem certs/ca.pem --mode 0644
`;

/** Adds `job run | diag | push | list | show | cancel`; `setExit` receives the exit code of those that follow a job. */
export function registerJobCommands(program: Command, ctx: () => Context, setExit: (code: number) => void): void {
  const job = program.command('job').description('one operation across many devices, at a controlled pace: run, diag, push, list, show, cancel');
  // Options go before `--`: everything after it is the command, options included.
  job.enablePositionalOptions();
  addCreateOptions(job.command('run').description('run a command on many devices (no shell), follow it, report failures with their output'))
    .argument('[argv...]', 'the command and its arguments, after --')
    .option('--timeout <seconds>', 'end each run after this long, timed_out (1 to 3600, default 300)')
    .passThroughOptions()
    .addHelpText('after', RUN_HELP)
    .action(
      withCode(async (argv: string[], o, cmd: Command) => {
        setExit(await (await commands.job()).jobRun(ctx(), argv, o, sawDoubleDash(cmd)));
      }),
    );
  addCreateOptions(job.command('diag').description('run a diagnostics op on many devices, follow it, print each result'))
    .argument('<op>', 'the diagnostics op')
    .option('--path <path>', "log.tail: the log file (absolute, inside the device's log dirs)")
    .option('--lines <n>', 'log.tail: how many lines', whole('--lines', 1, 10_000))
    .option('--limit <n>', 'process.list: how many processes', whole('--limit', 1, 10_000))
    .addHelpText('after', DIAG_HELP)
    .action(withCode(async (op: string, o) => setExit(await (await commands.job()).jobDiag(ctx(), op, o))));
  addCreateOptions(job.command('push').description("write a file to a path under many devices' files root (administrators)"))
    .argument('<file>', 'the local file')
    .argument('<path>', 'where on each device, relative to its files root')
    .option('--mode <mode>', 'the octal file mode (default 0644)')
    .addHelpText('after', PUSH_HELP)
    .action(withCode(async (file: string, path: string, o) => setExit(await (await commands.job()).jobPush(ctx(), file, path, o))));
  job
    .command('list')
    .description('jobs (yours; administrators: everyone’s) with their progress, newest first')
    .addOption(new Option('--status <status>', 'only jobs in this state').choices(Object.keys(JOB_STATUS_CHOICES)))
    .option('--json', 'print the jobs as JSON')
    .action(withCode(async (o) => (await commands.job()).jobList(ctx(), o)));
  job
    .command('show <job-id>')
    .description('one job: what it runs, its target and rollout, its counts and every execution')
    .option('--json', 'print the job and its executions as JSON')
    .action(withCode(async (id: string, o) => (await commands.job()).jobShow(ctx(), id, o)));
  job
    .command('cancel <job-id>')
    .description('cancel a job: what has not started is canceled; what runs runs to its end')
    .option('--json', 'print the job as JSON')
    .action(withCode(async (id: string, o) => (await commands.job()).jobCancel(ctx(), id, o)));
}

/** Whether the command line held `--` (commander drops it; `job run` needs it before the command). */
function sawDoubleDash(cmd: Command): boolean {
  let root = cmd;
  while (root.parent) root = root.parent;
  return ((root as unknown as { rawArgs?: string[] }).rawArgs ?? []).includes('--');
}
