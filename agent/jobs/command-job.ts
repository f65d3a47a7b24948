/**
 * @module A `command` job on the device: its argv run without a shell or a PTY (../exec/runner)
 * in the files root, with the environment exec streams give a command (no `TETHER_*`, no TERM),
 * stdin closed at once. Its output is read as fast as it comes and only its last
 * OUTPUT_TAIL_BYTES kept (./output-tail); past `timeout_seconds` the command and everything it
 * started are killed and the attempt ends `timed_out`. Exit 0 succeeds; anything else fails with
 * `exit_nonzero` and the exit code (null when a signal ended it).
 */
import { stat } from 'node:fs/promises';
import { OUTPUT_TAIL_BYTES } from '../../shared/protocol/jobs';
import { runCommand } from '../exec/runner';
import { userEnvironment } from '../shell/shell-env';
import { failed, type JobOutcome, type KindRunner } from './outcome';
import { OutputTail } from './output-tail';

/** The environment of a job's command: as an exec stream's (../exec/exec-handler), there is no terminal. */
function commandEnvironment(): Record<string, string> {
  const env = userEnvironment(process.env);
  delete env.TERM;
  return env;
}

export const runCommandJob: KindRunner<'command'> = async (work, ctx) => {
  const cwd = ctx.config.filesRoot;
  // A missing root would read as "command not found" (spawn's ENOENT names no culprit).
  const root = await stat(cwd).catch(() => undefined);
  if (!root?.isDirectory()) return failed('not_found', `the files root ${cwd} of ${ctx.config.deviceId} is not a directory`);
  if (ctx.signal.aborted) return failed('canceled', 'canceled before it started');

  const run = runCommand({ argv: work.argv, env: commandEnvironment(), cwd });
  run.stdin.end();
  // Only the program's name: its arguments may hold secrets, and the agent's log is not the audit.
  ctx.log.info('job command started', { command: work.argv[0], pid: run.pid });
  const tail = new OutputTail(OUTPUT_TAIL_BYTES);
  run.stdout.on('data', (chunk: Buffer) => tail.push(chunk));
  run.stderr.on('data', (chunk: Buffer) => tail.push(chunk));

  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    void run.kill();
  }, work.timeout_seconds * 1000);
  const cancel = () => void run.kill();
  ctx.signal.addEventListener('abort', cancel, { once: true });
  const result = await run.result;
  clearTimeout(timer);
  ctx.signal.removeEventListener('abort', cancel);
  await run.kill(); // whatever the command left running in its session ends with it

  if (result.startError) tail.push(Buffer.from(`${work.argv[0]}: ${result.startError}\n`));
  ctx.log.info('job command exited', { pid: run.pid, code: result.code, signal: result.signal, timed_out: timedOut });
  const ran: Partial<JobOutcome> = { exit_code: result.signal ? null : result.code, output_tail: tail.text() };
  if (timedOut) {
    return { status: 'timed_out', ...ran, exit_code: null, error: { code: 'timeout', message: `killed after its timeout of ${work.timeout_seconds} s` } };
  }
  if (result.code === 0 && !result.signal) return { status: 'succeeded', ...ran };
  const why = result.startError ? `${work.argv[0]}: ${result.startError}` : result.signal ? `killed by ${result.signal}` : `exited with status ${result.code}`;
  return failed('exit_nonzero', why, ran);
};
