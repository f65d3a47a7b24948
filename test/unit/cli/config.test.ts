import { chmodSync, mkdtempSync, readFileSync, statSync, writeFileSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { configPath, credentials, forgetToken, loginHint, readConfig, writeConfig } from '../../../cli/config';
import { CliError } from '../../../cli/errors';

let dir: string;
let env: NodeJS.ProcessEnv;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'tether-cli-config-'));
  env = { XDG_CONFIG_HOME: dir };
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function thrown(fn: () => unknown): CliError {
  try {
    fn();
  } catch (err) {
    if (err instanceof CliError) return err;
    throw err;
  }
  throw new Error('nothing was thrown');
}

describe('config file', () => {
  it('lives in $XDG_CONFIG_HOME/tether, else ~/.config/tether', () => {
    expect(configPath(env)).toBe(join(dir, 'tether', 'config.json'));
    expect(configPath({ HOME: '/home/ann' })).toMatch(/\/\.config\/tether\/config\.json$/);
  });

  it('is written readable by its owner only, and read back', () => {
    const path = writeConfig(env, { server: 'http://s', token: 'tth_x', username: 'ann', expires_at: null });
    expect(path).toBe(configPath(env));
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(statSync(join(dir, 'tether')).mode & 0o777).toBe(0o700);
    expect(JSON.parse(readFileSync(path, 'utf8'))).toEqual({ server: 'http://s', token: 'tth_x', username: 'ann', expires_at: null });
    expect(readConfig(env)).toEqual({ server: 'http://s', token: 'tth_x', username: 'ann', expires_at: null });
  });

  it('is empty when missing, and a CliError naming the file when it is not a config', () => {
    expect(readConfig(env)).toEqual({});
    mkdirSync(join(dir, 'tether'));
    writeFileSync(configPath(env), '{"server": 42}');
    const err = thrown(() => readConfig(env));
    expect(err.code).toBe('bad_config');
    expect(err.message).toContain(configPath(env));
  });
});

describe('forgetting the token', () => {
  it('removes the token, its id and expiry, and keeps every other field and the mode', () => {
    mkdirSync(join(dir, 'tether'));
    const path = configPath(env);
    const before = { server: 'http://s', username: 'ann', token: 'tth_x', token_id: 'tok-1', expires_at: '2030-01-01T00:00:00Z', editor: 'vim' };
    writeFileSync(path, JSON.stringify(before));
    chmodSync(path, 0o640);
    expect(forgetToken(env)).toBe(path);
    expect(JSON.parse(readFileSync(path, 'utf8'))).toEqual({ server: 'http://s', username: 'ann', editor: 'vim' });
    expect(statSync(path).mode & 0o777).toBe(0o640);
  });

  it('keeps fields this client does not know when the config is written again (login)', () => {
    writeConfig(env, { ...readConfig(env), server: 'http://s' });
    writeFileSync(configPath(env), JSON.stringify({ server: 'http://s', theme: { dark: true } }));
    writeConfig(env, { ...readConfig(env), token: 't' });
    expect(JSON.parse(readFileSync(configPath(env), 'utf8'))).toEqual({ server: 'http://s', theme: { dark: true }, token: 't' });
    expect(statSync(configPath(env)).mode & 0o777).toBe(0o600);
  });
});

describe('credentials', () => {
  it('take the environment over the stored values, without trailing slashes', () => {
    writeConfig(env, { server: 'http://stored/', token: 'stored' });
    expect(credentials(env)).toEqual({ server: 'http://stored', token: 'stored' });
    expect(credentials({ ...env, TETHER_SERVER: 'http://env//', TETHER_TOKEN: 'env' })).toEqual({ server: 'http://env', token: 'env' });
  });

  it('say how to log in when the server or the token is missing', () => {
    const noServer = thrown(() => credentials({ ...env, TETHER_TOKEN: 't' }));
    expect(noServer).toMatchObject({ code: 'not_logged_in', exitCode: 1 });
    expect(noServer.message).toContain('TETHER_SERVER');
    const noToken = thrown(() => credentials({ ...env, TETHER_SERVER: 'http://s' }));
    expect(noToken).toMatchObject({ code: 'not_logged_in' });
    expect(noToken.message).toContain('tether login --username NAME');
  });

  it('suggest only the login flags the stored config cannot fill in', () => {
    expect(loginHint(env, {})).toBe('tether login --server URL --username NAME');
    expect(loginHint({ TETHER_SERVER: 'http://s' }, {})).toBe('tether login --username NAME');
    expect(loginHint(env, { server: 'http://s', username: 'ann' })).toBe('tether login');
  });
});
