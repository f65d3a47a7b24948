import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadServerConfig } from '../../../cmd/server-config';
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
