/** The agent bundle's command line (cmd/agent-args.ts): the option table read by util.parseArgs. */
import { describe, expect, it } from 'vitest';
import { AgentUsageError, parseAgentArgs } from '../../../cmd/agent-args';
import { AGENT_OPTIONS } from '../../../cmd/agent-options';

const viaTether = { usage: 'tether agent', description: 'run the device agent', version: false };
const alone = { usage: 'tether-agent', description: 'the tether device agent', version: true };

function usageError(args: string[], command = viaTether): string {
  try {
    parseAgentArgs(args, command);
  } catch (err) {
    expect(err).toBeInstanceOf(AgentUsageError);
    return (err as Error).message;
  }
  throw new Error(`${args.join(' ')} was accepted`);
}

describe('parseAgentArgs', () => {
  it('takes --server repeated, joined with commas as the variable holds several', () => {
    const parsed = parseAgentArgs(['--server', 'http://a:8081', '--server=http://b:8082', '--device-id', 'd'], viaTether);
    expect(parsed).toMatchObject({ kind: 'run', flags: { server: 'http://a:8081,http://b:8082', deviceId: 'd' } });
  });

  it('reads every option, in both --flag value and --flag=value forms', () => {
    const parsed = parseAgentArgs(
      [
        '--server',
        'http://b:8080',
        '--device-id=dev-1',
        '--token',
        't',
        '--files-root',
        '/srv',
        '--log-dirs',
        '/a:/b',
        '--max-sessions',
        '4',
        '--max-upload-bytes=9',
        '--state-dir',
        '/st',
      ],
      viaTether,
    );
    expect(parsed).toEqual({
      kind: 'run',
      flags: {
        server: 'http://b:8080',
        deviceId: 'dev-1',
        token: 't',
        filesRoot: '/srv',
        logDirs: '/a:/b',
        maxSessions: '4',
        maxUploadBytes: '9',
        stateDir: '/st',
        warmShell: undefined,
      },
    });
  });

  it('turns --no-warm-shell into warmShell "0" and leaves it to the environment otherwise', () => {
    expect(parseAgentArgs(['--no-warm-shell'], viaTether)).toMatchObject({ kind: 'run', flags: { warmShell: '0' } });
    expect(parseAgentArgs([], viaTether)).toMatchObject({ kind: 'run', flags: { warmShell: undefined, server: undefined } });
  });

  it('prints a help that lists every option, and the version only where it is offered', () => {
    const help = parseAgentArgs(['--help'], viaTether);
    if (help.kind !== 'help') throw new Error('no help');
    expect(help.text).toMatch(/^Usage: tether agent \[options\]\n\nrun the device agent\n\nOptions:\n/);
    for (const o of AGENT_OPTIONS) expect(help.text).toContain(`--${o.flag}`);
    expect(help.text).not.toContain('--version');
    expect(parseAgentArgs(['-h'], viaTether).kind).toBe('help');
    expect(parseAgentArgs(['-V'], alone)).toEqual({ kind: 'version' });
    expect((parseAgentArgs(['--help'], alone) as { text: string }).text).toContain('-V, --version');
    expect(usageError(['--version'])).toContain("unknown option '--version'");
  });

  it('refuses unknown options, arguments and missing values, naming them and where to look', () => {
    expect(usageError(['--sever', 'x'])).toBe("unknown option '--sever'; see tether agent --help");
    expect(usageError(['extra'])).toMatch(/^unexpected argument 'extra'.*; see tether agent --help$/);
    expect(usageError(['--server'])).toMatch(/^option '--server <value>' argument missing; see tether agent --help$/);
    expect(usageError(['--no-warm-shell=1'], alone)).toMatch(/does not take an argument; see tether-agent --help$/);
  });
});
