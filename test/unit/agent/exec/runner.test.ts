/** The agent's command runner with real processes: exit codes as shells report them, and a kill that ends everything the command started. */
import { tmpdir } from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import { runCommand, type CommandRun } from '../../../../agent/exec/runner';
import { processExists } from '../../../../agent/shell/process-session';
import { waitFor } from '../../../helpers/wait';

const env = { PATH: process.env.PATH ?? '/usr/bin:/bin' };
const runs: CommandRun[] = [];
const run = (...argv: string[]) => {
  const r = runCommand({ argv, env, cwd: tmpdir() });
  runs.push(r);
  return r;
};
afterEach(async () => {
  await Promise.all(runs.splice(0).map((r) => r.kill()));
});

const collect = (r: CommandRun) => {
  const out: Buffer[] = [];
  r.stdout.on('data', (c: Buffer) => out.push(c));
  r.stderr.resume();
  return () => Buffer.concat(out).toString();
};

describe('runCommand', () => {
  it('runs argv without a shell in cwd, stdin to stdout, and resolves with the exit code', async () => {
    const r = run('sh', '-c', 'pwd; cat; exit 7');
    const out = collect(r);
    r.stdin.end('piped');
    expect(await r.result).toEqual({ code: 7, signal: null });
    expect(out()).toBe(`${tmpdir()}\npiped`);
  });

  it('reports a command that is not found (127), not runnable (126), or killed by a signal (128+N)', async () => {
    expect(await run('no-such-command-at-all').result).toEqual({ code: 127, signal: null, startError: 'command not found' });
    expect(await run('/no/such/file').result).toMatchObject({ code: 127, startError: 'No such file or directory' });
    expect(await run(tmpdir()).result).toMatchObject({ code: 126, startError: 'Permission denied' });
    const killed = run('sh', '-c', 'kill -INT $$');
    killed.stdout.resume();
    killed.stderr.resume();
    expect(await killed.result).toEqual({ code: 130, signal: 'SIGINT' });
  });

  it('kill ends the command and what it started, even what ignores SIGTERM, within the grace', async () => {
    const r = run('sh', '-c', `trap '' TERM; sh -c "trap '' TERM; echo child=\\$\\$; exec sleep 60" & wait`);
    const out = collect(r);
    const child = Number((await waitFor(() => /child=(\d+)/.exec(out()), 'the grandchild'))[1]);
    const t0 = Date.now();
    await r.kill();
    expect(Date.now() - t0).toBeLessThan(5000);
    await waitFor(() => !processExists(child), 'the grandchild to end', 3000);
    expect((await r.result).signal).toBe('SIGKILL');
  });
});
