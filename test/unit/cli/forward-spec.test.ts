/** `tether forward`'s forwards, written as ssh -L writes them (cli/forward-spec.ts). */
import { describe, expect, it } from 'vitest';
import { CliError } from '../../../cli/errors';
import { parseForwardSpec } from '../../../cli/forward-spec';

function usage(text: string): string {
  try {
    parseForwardSpec(text);
  } catch (err) {
    expect(err).toBeInstanceOf(CliError);
    expect((err as CliError).exitCode).toBe(2);
    return (err as Error).message;
  }
  throw new Error(`${text} was accepted`);
}

describe('parseForwardSpec', () => {
  it('reads LOCAL_PORT:HOST:PORT with the loopback as bind address, and BIND:LOCAL_PORT:HOST:PORT', () => {
    expect(parseForwardSpec('15432:127.0.0.1:5432')).toEqual({
      bindHost: '127.0.0.1',
      localPort: 15432,
      target: '127.0.0.1:5432',
      text: '15432:127.0.0.1:5432',
    });
    expect(parseForwardSpec('0.0.0.0:8080:LOCALHOST:80')).toMatchObject({ bindHost: '0.0.0.0', localPort: 8080, target: 'localhost:80' });
    expect(parseForwardSpec('0:db.local:6379')).toMatchObject({ localPort: 0, target: 'db.local:6379' });
    expect(parseForwardSpec('localhost:2222:10.0.0.5:22')).toMatchObject({ bindHost: 'localhost', target: '10.0.0.5:22' });
  });

  it('takes IPv6 addresses in brackets on either side', () => {
    expect(parseForwardSpec('[::1]:8080:[::1]:80')).toMatchObject({ bindHost: '::1', localPort: 8080, target: '[::1]:80' });
    expect(parseForwardSpec('8080:[fe80::0:1]:80')).toMatchObject({ bindHost: '127.0.0.1', target: '[fe80::1]:80' });
  });

  it('says what is wrong, as a usage error', () => {
    expect(usage('8080')).toContain('a forward is [BIND_ADDR:]LOCAL_PORT:REMOTE_HOST:REMOTE_PORT');
    expect(usage('8080:::1:22')).toContain('brackets');
    expect(usage('70000:127.0.0.1:22')).toContain('"70000" is not a port (0 to 65535)');
    expect(usage('8080:127.0.0.1:0')).toContain('"0" is not a port (1 to 65535)');
    expect(usage('8080:bad host:22')).toContain('is not a host name or IP address');
    expect(usage('no way:8080:127.0.0.1:22')).toContain('is not an address to listen on');
  });
});
