/**
 * The interface docs under docs/ stay true: their tables of endpoints, error codes, settings,
 * close codes, control messages and commands are compared with what the code serves and knows.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { Command } from 'commander';
import { afterAll, describe, expect, it } from 'vitest';
import { ERROR_CODES } from '../api/errors';
import { FLEET_ERRORS } from '../api/fleet/errors';
import { registerClientCommands } from '../cli/index';
import { addAgentOptions } from '../cmd/agent-options';
import { SETTING_NAMES } from '../cmd/server-config';
import { AGENT_CLOSE, agentToBrokerMessage, brokerToAgentMessage } from '../shared/control-channel';
import { STREAM_CLOSE } from '../shared/session-stream';
import { detachedApi } from './helpers/api';

const doc = (name: string) => readFileSync(resolve(__dirname, '..', 'docs', name), 'utf8');

/** The first cells of a markdown table's rows under `heading`, without their backticks. */
function firstColumn(text: string, heading: string): string[] {
  const start = text.indexOf(`\n${heading}\n`);
  expect(start, `heading ${heading}`).toBeGreaterThan(-1);
  const rows: string[] = [];
  for (const line of text.slice(start + heading.length + 2).split('\n')) {
    if (line.startsWith('#')) break;
    const cell = /^\| `([^`]+)` \|/.exec(line);
    if (cell) rows.push(cell[1]!);
  }
  return rows;
}

describe('docs/http-api.md', () => {
  const { api, close } = detachedApi();
  afterAll(close);

  it('lists exactly the endpoints the server serves', () => {
    const documented = firstColumn(doc('http-api.md'), '## Endpoints');
    expect([...documented].sort()).toEqual([...api.endpoints()].sort());
  });

  it('names every error code', () => {
    const text = doc('http-api.md');
    for (const code of [...Object.keys(ERROR_CODES), ...Object.keys(FLEET_ERRORS)]) expect(text).toContain(`\`${code}\``);
  });
});

describe('docs/settings.md', () => {
  it('lists every server setting and every agent flag', () => {
    const text = doc('settings.md');
    for (const name of SETTING_NAMES) expect(text).toContain(`\`TETHER_${name.toUpperCase()}\``);
    const agent = addAgentOptions(new Command('agent'));
    for (const option of agent.options) expect(text).toContain(`\`${option.long}`);
  });
});

describe('docs/session-streams.md and docs/control-channel.md', () => {
  it('list every close code', () => {
    const stream = firstColumn(doc('session-streams.md'), '## Close codes').map(Number);
    expect(stream.sort()).toEqual([...new Set(Object.values(STREAM_CLOSE))].sort());
    const control = firstColumn(doc('control-channel.md'), '## Close codes of the control channel').map(Number);
    expect(control.sort()).toEqual(Object.values(AGENT_CLOSE).sort());
  });

  it('list every control message', () => {
    const documented = firstColumn(doc('control-channel.md'), '## Messages');
    const options = [...brokerToAgentMessage._zod.def.options, ...agentToBrokerMessage._zod.def.options];
    const types = options.map((o) => o.shape.type._zod.def.values[0]);
    expect(documented.sort()).toEqual(types.sort());
  });
});

describe('docs/cli.md', () => {
  it('lists every command of the client', () => {
    const program = new Command('tether');
    registerClientCommands(program, () => {
      throw new Error('not run');
    }, () => {});
    const names = program.commands.flatMap((c) =>
      c.commands.length > 0 ? c.commands.map((sub) => `${c.name()} ${sub.name()}`) : [c.name()],
    );
    const documented = firstColumn(doc('cli.md'), '## Commands').map((cmd) => cmd.replace(/^tether /, ''));
    for (const name of [...names, 'server', 'agent', 'broker']) {
      expect(documented.some((d) => d === name || d.startsWith(`${name} `)), name).toBe(true);
    }
  });
});

