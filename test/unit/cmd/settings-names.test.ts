/**
 * The one list of `TETHER_*` variables (docs/settings.md) stays complete: every name the source
 * reads is in it, with the component that reads it, and only unknown names are reported.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { addAgentOptions } from '../../../cmd/agent-options';
import { KNOWN_SETTINGS, settingsOf, unknownSettings } from '../../../cmd/settings-names';

const root = resolve(__dirname, '../../..');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

describe('KNOWN_SETTINGS', () => {
  it('holds every TETHER_ variable the source names', () => {
    const missing: string[] = [];
    for (const dir of ['agent', 'relay', 'api', 'cli', 'cluster', 'cmd', 'shared', 'console']) {
      for (const file of sourceFiles(join(root, dir))) {
        // Names of variables, in quotes, backticks or env.X (not TETHER_VERSION-like constants).
        for (const m of readFileSync(file, 'utf8').matchAll(/(?:['"`]|env\.)(TETHER_[A-Z0-9_]+)/g)) {
          if (!Object.hasOwn(KNOWN_SETTINGS, m[1]!)) missing.push(`${relative(root, file)}: ${m[1]}`);
        }
      }
    }
    expect(missing).toEqual([]);
  });

  it("knows each agent flag's variable as the agent's", () => {
    const agent = addAgentOptions(new Command('agent'));
    const named = agent.options.flatMap((o) => [...o.description.matchAll(/env (TETHER_[A-Z_]+)/g)].map((m) => m[1]!));
    expect(named.length).toBeGreaterThan(5);
    for (const name of named) expect(settingsOf('agent'), name).toContain(name);
    expect(settingsOf('client').sort()).toEqual(['TETHER_SERVER', 'TETHER_TOKEN']);
  });
});

describe('unknownSettings', () => {
  it('reports only TETHER_ variables nobody knows, sorted, each with the nearest known name', () => {
    const env = { PATH: '/bin', TETHER_TOKEN: 't', TETHER_SEVRER: 'x', TETHER_LISTN: 'y', TETHER_WHATEVER: 'z', tether_listen: 'w' };
    expect(unknownSettings(env)).toEqual([
      { path: 'TETHER_LISTN', message: 'unknown setting; did you mean TETHER_LISTEN?' },
      { path: 'TETHER_SEVRER', message: 'unknown setting; did you mean TETHER_SERVER?' },
      { path: 'TETHER_WHATEVER', message: 'unknown setting' },
    ]);
  });
});
