/** Server settings (docs/settings.md): defaults, file and environment, and every mistake named. */
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EDGE_SETTING_NAMES, ConfigError, loadEdgeConfig, loadServerConfig, SETTING_NAMES } from '../../../cmd/server-config';
import { settingsOf } from '../../../cmd/settings-names';
import { tempDir } from '../../helpers/stack';

describe('server settings', () => {
  it('has the contract defaults', () => {
    const c = loadServerConfig({}, undefined);
    expect(c).toMatchObject({
      host: '127.0.0.1',
      port: 8080,
      data_dir: resolve('./data'),
      publicUrl: undefined,
      deploy_runtime: 'simulated',
      sim_replica_ms: 200,
      log_level: 'info',
      heartbeat_ms: 20_000,
      headers_timeout_ms: 15_000,
      request_timeout_ms: 60_000,
    });
    expect(Object.isFrozen(c)).toBe(true);
  });

  it('reads a YAML file and lets the environment win', () => {
    const file = join(tempDir(), 'tether.yaml');
    writeFileSync(file, 'listen: "[::1]:9000"\nlog_level: debug\nsim_replica_ms: 50\n');
    const c = loadServerConfig({ TETHER_LOG_LEVEL: 'warn' }, file);
    expect(c).toMatchObject({ host: '::1', port: 9000, log_level: 'warn', sim_replica_ms: 50 });
  });

  it('names every bad setting, by file key and variable', () => {
    const file = join(tempDir(), 'bad.yaml');
    writeFileSync(file, 'listen: nowhere\ncolour: blue\n');
    let error: unknown;
    try {
      loadServerConfig({ TETHER_LOG_LEVEL: 'loud', TETHER_PUBLIC_URL: 'ftp://x' }, file);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as Error).message;
    expect(message).toContain('listen (TETHER_LISTEN)');
    expect(message).toContain('colour (TETHER_COLOUR): unknown setting');
    expect(message).toContain('log_level (TETHER_LOG_LEVEL)');
    expect(message).toContain('public_url (TETHER_PUBLIC_URL)');
  });

  it('refuses a port out of range and an unreadable file', () => {
    expect(() => loadServerConfig({ TETHER_LISTEN: '127.0.0.1:70000' }, undefined)).toThrow(/out of range/);
    expect(() => loadServerConfig({}, '/nonexistent/tether.yaml')).toThrow(/cannot read config file/);
  });
});

describe('unknown settings', () => {
  const messageOf = (env: NodeJS.ProcessEnv, file?: string) => {
    try {
      loadServerConfig(env, file);
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      return (err as Error).message;
    }
    throw new Error('no ConfigError');
  };

  it('stops on a misspelled variable and names the closest known one', () => {
    expect(messageOf({ TETHER_LISTN: '127.0.0.1:0' })).toContain('TETHER_LISTN: unknown setting; did you mean TETHER_LISTEN?');
    expect(messageOf({ TETHER_LOGLEVEL: 'debug' })).toContain('did you mean TETHER_LOG_LEVEL?');
    expect(messageOf({ TETHER_DEVICE_TOKN: 'x' })).toContain('did you mean TETHER_DEVICE_TOKEN?');
    expect(messageOf({ TETHER_COLOUR: 'blue' })).toMatch(/TETHER_COLOUR: unknown setting$/m);
  });

  it('reports every unknown variable at once, with the invalid values', () => {
    const message = messageOf({ TETHER_LISTN: 'x', TETHER_DATADIR: 'y', TETHER_LOG_LEVEL: 'loud' });
    expect(message).toContain('TETHER_DATADIR: unknown setting; did you mean TETHER_DATA_DIR?');
    expect(message).toContain('TETHER_LISTN: unknown setting');
    expect(message).toContain('log_level (TETHER_LOG_LEVEL)');
  });

  it("ignores the agent's, the client's and the reserved variables", () => {
    const c = loadServerConfig({
      TETHER_SERVER: 'http://127.0.0.1:1',
      TETHER_TOKEN: 'tth_x',
      TETHER_DEVICE_ID: 'd',
      TETHER_DEVICE_TOKEN: 'tdev_x',
      TETHER_FILES_ROOT: '/tmp',
      TETHER_EXIT_NONCE: 'n',
      TETHER_NATS_URL: 'nats://127.0.0.1:4222',
      TETHER_FORWARD_ALLOW: '*',
      TETHER_LISTEN: '127.0.0.1:9',
    });
    expect(c.port).toBe(9);
  });

  it('names the closest key in a config file, and says whose a key of another component is', () => {
    const file = join(tempDir(), 'typos.yaml');
    writeFileSync(file, 'log_lvl: debug\nserver: http://x\nnats_url: http://x\nTETHER_LISTEN: 127.0.0.1:0\n');
    const message = messageOf({}, file);
    expect(message).toContain('log_lvl (TETHER_LOG_LVL): unknown setting; did you mean log_level?');
    expect(message).toContain('server (TETHER_SERVER): a setting of the agent and the client, not of tether server');
    expect(message).toContain('nats_url (TETHER_NATS_URL): must be nats://host:port');
    expect(message).toMatch(/^ {2}TETHER_LISTEN: unknown setting; did you mean listen\?$/m);
  });

  it('knows each of its settings in the shared list, as the server', () => {
    expect(SETTING_NAMES.map((n) => `TETHER_${n.toUpperCase()}`).sort()).toEqual(settingsOf('server').sort());
  });
});

describe('loadEdgeConfig', () => {
  it('needs the bus and the public URL, and says so', () => {
    let message = '';
    try {
      loadEdgeConfig({});
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toMatch(/^invalid broker settings:/);
    expect(message).toContain('public_url (TETHER_PUBLIC_URL): is required');
    expect(message).toContain('nats_url (TETHER_NATS_URL): is required');
  });

  it("reads an edge node's settings, and refuses the server's data settings as not its own", () => {
    const c = loadEdgeConfig({ TETHER_NATS_URL: 'nats://u:p@127.0.0.1:4222', TETHER_PUBLIC_URL: 'http://edge-1:8081/', TETHER_LISTEN: '0.0.0.0:8081' });
    expect(c).toMatchObject({ host: '0.0.0.0', port: 8081, publicUrl: 'http://edge-1:8081', natsUrl: 'nats://u:p@127.0.0.1:4222', heartbeat_ms: 20_000 });
    const file = join(tempDir(), 'edge.yaml');
    writeFileSync(file, 'data_dir: /d\n');
    expect(() => loadEdgeConfig({ TETHER_NATS_URL: 'nats://x:4222', TETHER_PUBLIC_URL: 'http://e' }, file)).toThrow(
      'data_dir (TETHER_DATA_DIR): a setting of the server, not of tether broker',
    );
  });

  it('knows each of its settings in the shared list, as the broker', () => {
    expect(EDGE_SETTING_NAMES.map((n) => `TETHER_${n.toUpperCase()}`).sort()).toEqual(settingsOf('broker').sort());
  });
});
