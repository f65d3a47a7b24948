/**
 * `tether completion bash|zsh|fish` (docs/cli.md): each script parses in its shell, and completes
 * commands, subcommands, options and choices there, for every command the program has, since the
 * scripts are generated from the commander program itself. zsh and fish come from the system's
 * packages (installed when the tests run as root, as CI does; test/helpers/system-program.ts).
 */
import { execFile, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Command, Option } from 'commander';
import { beforeAll, describe, expect, it } from 'vitest';
import { completionScript, type Shell } from '../../cli/commands/completion';
import { registerClientCommands } from '../../cli/index';
import { runTether, TETHER_BIN } from '../helpers/processes';
import { startStack, tempDir } from '../helpers/stack';
import { systemProgram } from '../helpers/system-program';

const zsh = systemProgram(['/usr/bin/zsh', '/bin/zsh'], 'zsh', 'the zsh completion tests');
const fish = systemProgram(['/usr/bin/fish'], 'fish', 'the fish completion tests');
const scripts = {} as Record<Shell, string>;
let dir: string;

beforeAll(async () => {
  dir = tempDir('tether-completion-');
  for (const shell of ['bash', 'zsh', 'fish'] as const) {
    const res = await runTether(['completion', shell]);
    expect(res.code, res.stderr).toBe(0);
    scripts[shell] = join(dir, `tether.${shell}`);
    writeFileSync(scripts[shell], `${res.stdout}\n`);
  }
});

/** Runs `shell ARGS`; its exit code, stdout and stderr. */
function run(shell: string, args: string[]) {
  const res = spawnSync(shell, args, { encoding: 'utf8', timeout: 20_000 });
  return { code: res.status, stdout: res.stdout, stderr: res.stderr };
}

/** `run` without blocking: the server of the device tests answers from this process. */
function runAsync(shell: string, args: string[], env: NodeJS.ProcessEnv) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    execFile(shell, args, { encoding: 'utf8', timeout: 20_000, env }, (err, stdout, stderr) =>
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : null) : 0, stdout, stderr }),
    );
  });
}

/** The bash program that prints what completes for each of `lines`, one line each. */
function bashProgram(script: string, lines: string[][]): string {
  const calls = lines.map((words) => `t ${words.map((w) => `'${w}'`).join(' ')}`).join('\n');
  return `source '${script}'
# printf, not echo: a completion of "-n" or "-e" would be taken for an option of echo.
t() { COMP_WORDS=("$@"); COMP_CWORD=$((\${#COMP_WORDS[@]} - 1)); COMPREPLY=(); _tether; printf "%s\\n" "\${COMPREPLY[*]}"; }
${calls}`;
}
const replies = (stdout: string, n: number) =>
  stdout
    .split('\n')
    .slice(0, n)
    .map((l) => (l ? l.split(' ') : []));

/**
 * What bash completes for each command line (the last word being completed, '' for a new one),
 * with `script` sourced and the completion function called as readline would.
 */
function bashComplete(script: string, lines: string[][]): string[][] {
  const res = run('bash', ['-c', bashProgram(script, lines)]);
  expect(res.stderr).toBe('');
  return replies(res.stdout, lines.length);
}

/** Every command path of the client (`deploy canary weight` …) with its options, built as the CLI builds it. */
function clientCommands(): Array<{ path: string[]; subcommands: string[]; options: string[] }> {
  const program = new Command('tether');
  registerClientCommands(
    program,
    () => {
      throw new Error('not run');
    },
    () => {},
  );
  const out: Array<{ path: string[]; subcommands: string[]; options: string[] }> = [];
  const walk = (cmd: Command, path: string[]) => {
    // Hidden commands (`__complete-devices`, which the scripts call) and options are not offered.
    const visible = cmd
      .createHelp()
      .visibleCommands(cmd)
      .filter((c) => c.name() !== 'help');
    out.push({
      path,
      subcommands: visible.map((c) => c.name()),
      options: cmd.options.filter((o) => !o.hidden).flatMap((o) => [o.short, o.long].filter((n): n is string => !!n)),
    });
    for (const sub of visible) walk(sub, [...path, sub.name()]);
  };
  walk(program, []);
  return out;
}

describe('the scripts parse', () => {
  it('bash -n', () => {
    expect(run('bash', ['-n', scripts.bash])).toMatchObject({ code: 0, stderr: '' });
  });
  it('zsh -n', () => {
    expect(run(zsh, ['-n', scripts.zsh])).toMatchObject({ code: 0, stderr: '' });
  });
  it('fish -n', () => {
    expect(run(fish, ['-n', scripts.fish])).toMatchObject({ code: 0, stderr: '' });
  });
  it('an unknown shell is a usage mistake', async () => {
    expect((await runTether(['completion', 'tcsh'])).code).toBe(2);
  });
});

describe('bash completes', () => {
  it('commands, subcommands, options, choices and files', () => {
    writeFileSync(join(dir, 'web.yaml'), 'service: {}\n');
    const [dep, can, canary, env, envEq, file, status, protocol] = bashComplete(scripts.bash, [
      ['tether', 'dep'],
      ['tether', 'deploy', 'can'],
      ['tether', 'deploy', 'canary', ''],
      ['tether', 'deploy', 'apply', '--env', ''],
      ['tether', 'deploy', 'apply', '--env', '=', 'st'],
      ['tether', 'deploy', 'apply', '--env', 'dev', '-f', join(dir, 'we')],
      ['tether', 'deploy', 'list', '--st'],
      ['tether', 'session', 'open', 'cam-1', '--protocol', 'port'],
    ]);
    expect(dep).toEqual(['deploy']);
    expect(can).toEqual(['canary']);
    expect(canary).toEqual(expect.arrayContaining(['get', 'weight', 'halt', 'promote']));
    expect(env).toEqual(['dev', 'staging', 'prod']);
    expect(envEq).toEqual(['staging']);
    expect(file).toEqual([join(dir, 'web.yaml')]);
    expect(status).toEqual(['--status']);
    expect(protocol).toEqual(['port-forward']);
  });

  it('every subcommand and every option of every client command', () => {
    const commands = clientCommands();
    const lines: string[][] = [];
    const expected: Array<[string[], string]> = [];
    for (const c of commands) {
      for (const sub of c.subcommands) {
        lines.push(['tether', ...c.path, sub.slice(0, 3)]);
        expected.push([lines.at(-1)!, sub]);
      }
      for (const option of c.options) {
        lines.push(['tether', ...c.path, option]);
        expected.push([lines.at(-1)!, option]);
      }
    }
    expect(expected.length).toBeGreaterThan(100);
    const got = bashComplete(scripts.bash, lines);
    expected.forEach(([line, word], i) => expect(got[i], line.join(' ')).toContain(word));
  });

  it('a command added to the program completes with no change to the generator', () => {
    const program = new Command('tether');
    program
      .command('telescope')
      .command('focus')
      .addOption(new Option('--star <name>', 'which star').choices(['vega', 'deneb']));
    const file = join(dir, 'added.bash');
    writeFileSync(file, completionScript(program, 'bash'));
    expect(
      bashComplete(file, [
        ['tether', 'tel'],
        ['tether', 'telescope', 'f'],
        ['tether', 'telescope', 'focus', '--star', 'v'],
      ]),
    ).toEqual([['telescope'], ['focus'], ['vega']]);
  });
});

describe('fish completes', () => {
  it('commands, subcommands, options and choices', () => {
    const complete = (line: string) => {
      const res = run(fish, ['-c', `source '${scripts.fish}'; complete -C '${line}'`]);
      expect(res.stderr).toBe('');
      return res.stdout
        .split('\n')
        .filter(Boolean)
        .map((l) => l.split('\t')[0]);
    };
    expect(complete('tether dep')).toEqual(['deploy']);
    expect(complete('tether deploy can')).toEqual(['canary']);
    expect(complete('tether deploy canary ')).toEqual(expect.arrayContaining(['get', 'weight', 'halt', 'promote']));
    expect(complete('tether deploy apply --env ').sort()).toEqual(['dev', 'prod', 'staging']);
    expect(complete('tether fleet vehicles list --gr')).toEqual(['--group']);
  });
});

describe('zsh completes', () => {
  it('in a real interactive zsh with compinit: tether deploy can<TAB> becomes tether deploy canary', () => {
    // An interactive zsh on a pseudo-terminal (zsh/zpty); each read waits for its pattern.
    const driver = `zmodload zsh/zpty
zpty z 'zsh -f -i'
zpty -w z 'PS1="> "; autoload -U compinit; compinit -u -D; source ${scripts.zsh}; tether() { :; }; print RE""ADY'
zpty -r z out '*READY*'
zpty -w -n z $'tether deploy can\\t'
zpty -r z out '*deploy canary*' && print COMPLETED
zpty -d z`;
    const res = run(zsh, ['-f', '-c', driver]);
    expect(res.stdout.trim()).toBe('COMPLETED');
  });
});

describe('device ids complete from the server', () => {
  it('after a command that takes a device, and as the value of --device, in bash and fish', async () => {
    const stack = await startStack();
    try {
      for (const id of ['cam-1', 'cam-2', 'truck-7']) expect((await stack.admin.post('/v1/devices', { device_id: id })).status).toBe(201);
      // `tether` on PATH, as an installed client is: the scripts call `tether __complete-devices`.
      const bin = join(dir, 'bin');
      mkdirSync(bin, { recursive: true });
      writeFileSync(join(bin, 'tether'), `#!/bin/sh\nexec '${process.execPath}' '${TETHER_BIN}' "$@"\n`);
      chmodSync(join(bin, 'tether'), 0o755);
      const env = { ...process.env, PATH: `${bin}:${process.env.PATH}`, TETHER_SERVER: stack.url, TETHER_TOKEN: stack.adminToken, XDG_CONFIG_HOME: dir };
      const lines = [
        ['tether', 'shell', ''],
        ['tether', 'device', 'rm', 'tr'],
        ['tether', 'diag', 'cam'],
        ['tether', 'session', 'list', '--device', 'cam-'],
        ['tether', 'shell', 'cam-1', 'x'],
        ['tether', 'device', 'add', 'c'],
      ];
      const res = await runAsync('bash', ['-c', bashProgram(scripts.bash, lines)], env);
      expect(res.stderr).toBe('');
      const [shell, rm, cam, list, after, add] = replies(res.stdout, lines.length);
      expect(shell!.sort()).toEqual(['cam-1', 'cam-2', 'truck-7']);
      expect(rm).toEqual(['truck-7']);
      expect(cam!.sort()).toEqual(['cam-1', 'cam-2']);
      expect(list!.sort()).toEqual(['cam-1', 'cam-2']);
      // Only the first argument is a device; `device add` names a new one.
      expect(after).not.toContain('cam-1');
      expect(add).not.toContain('cam-1');
      const inFish = await runAsync(fish, ['-c', `source '${scripts.fish}'; complete -C 'tether shell '`], env);
      expect(inFish.stderr).toBe('');
      expect(inFish.stdout.split('\n').filter(Boolean).sort()).toEqual(['cam-1', 'cam-2', 'truck-7']);
      // Without a server, nothing is offered and nothing is printed into the line.
      const offline = await runAsync('bash', ['-c', bashProgram(scripts.bash, [['tether', 'shell', '']])], { ...env, TETHER_SERVER: 'http://127.0.0.1:9' });
      expect(offline).toMatchObject({ code: 0, stdout: '\n', stderr: '' });
    } finally {
      await stack.stop();
    }
  });
});
