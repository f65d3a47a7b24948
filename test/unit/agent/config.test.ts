/** The agent's logging settings: quiet text on a terminal, JSON at info elsewhere, and the variables that say otherwise. */
import { describe, expect, it } from 'vitest';
import { loadAgentConfig, logSettings } from '../../../agent/config';

const base = { TETHER_SERVER: 'http://127.0.0.1:8080', TETHER_DEVICE_ID: 'laptop', TETHER_DEVICE_TOKEN: 't', TETHER_STATE_DIR: '/tmp/x' };

describe('servers', () => {
  it('takes several, comma-separated, in order and without repeats, each with its two paths', () => {
    const config = loadAgentConfig({ server: 'http://a:8081, https://b.example/tether/,http://a:8081' }, base);
    expect(config.servers).toEqual([
      { connectUrl: 'ws://a:8081/v1/agent/connect', streamUrl: 'ws://a:8081/v1/agent/stream' },
      { connectUrl: 'wss://b.example/tether/v1/agent/connect', streamUrl: 'wss://b.example/tether/v1/agent/stream' },
    ]);
  });

  it('refuses a list with anything but URLs in it', () => {
    expect(() => loadAgentConfig({ server: 'http://a:8081,b:8082' }, base)).toThrow(
      /server: must be an http\(s\):\/\/ or ws\(s\):\/\/ URL, or several comma-separated/,
    );
    expect(() => loadAgentConfig({ server: ' , ' }, base)).toThrow(/server: must be/);
  });
});

describe('logSettings', () => {
  it('is text at warn on a terminal, JSON at info elsewhere', () => {
    const config = loadAgentConfig({}, base);
    expect(logSettings(config, true)).toEqual({ level: 'warn', format: 'text' });
    expect(logSettings(config, false)).toEqual({ level: 'info', format: 'json' });
  });

  it('follows TETHER_LOG_LEVEL and TETHER_LOG_FORMAT, each on its own', () => {
    const level = loadAgentConfig({}, { ...base, TETHER_LOG_LEVEL: 'debug' });
    expect(logSettings(level, true)).toEqual({ level: 'debug', format: 'text' });
    const format = loadAgentConfig({}, { ...base, TETHER_LOG_FORMAT: 'json' });
    expect(logSettings(format, true)).toEqual({ level: 'warn', format: 'json' });
    const both = loadAgentConfig({}, { ...base, TETHER_LOG_FORMAT: 'text', TETHER_LOG_LEVEL: 'error' });
    expect(logSettings(both, false)).toEqual({ level: 'error', format: 'text' });
  });

  it('refuses values it does not know, naming each variable', () => {
    expect(() => loadAgentConfig({}, { ...base, TETHER_LOG_FORMAT: 'JSON', TETHER_LOG_LEVEL: 'trace' })).toThrow(
      /logLevel: must be debug, info, warn or error \(TETHER_LOG_LEVEL\)\n\s+logFormat: must be json or text \(TETHER_LOG_FORMAT\)/,
    );
  });
});
