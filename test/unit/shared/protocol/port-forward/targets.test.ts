/** Port-forward targets and allow-list patterns (shared/protocol/port-forward/targets.ts): canonical forms, problems named, matching. */
import { describe, expect, it } from 'vitest';
import { DEFAULT_FORWARD_ALLOW, formatTarget, isAllowed, parseAllowList, parsePattern, parseTarget } from '../../../../../shared/protocol/port-forward/targets';

const target = (text: string) => {
  const t = parseTarget(text);
  if (!t.ok) throw new Error(t.problem);
  return t.value;
};
const problem = (text: string) => {
  const t = parseTarget(text);
  if (t.ok) throw new Error(`${text} was accepted`);
  return t.problem;
};

describe('parseTarget', () => {
  it('turns every spelling of a host into one canonical form', () => {
    expect(formatTarget(target('LOCALHOST:80'))).toBe('localhost:80');
    expect(formatTarget(target('127.1:22'))).toBe('127.0.0.1:22');
    expect(formatTarget(target('[0:0:0:0:0:0:0:1]:22'))).toBe('[::1]:22');
    expect(formatTarget(target('[::FFFF:127.0.0.1]:22'))).toBe('[::ffff:7f00:1]:22');
    expect(formatTarget(target('Db.Example.com:5432'))).toBe('db.example.com:5432');
    expect(formatTarget(target('bücher.example:443'))).toBe('xn--bcher-kva.example:443');
    expect(target('10.0.0.5:65535')).toEqual({ host: '10.0.0.5', port: 65535 });
  });

  it('names what is wrong', () => {
    expect(problem('localhost')).toContain('is not HOST:PORT');
    expect(problem('::1:22')).toContain('brackets');
    expect(problem('db:0')).toContain('"0" is not a port from 1 to 65535');
    expect(problem('db:65536')).toContain('is not a port');
    expect(problem('db:22x')).toContain('is not a port');
    expect(problem('db:*')).toContain('is not a port');
    expect(problem(':22')).toContain('is not a host name or IP address');
    for (const bad of ['a b:1', 'a/b:1', 'a..b:1', '-a:1', 'a_b:1', '256.1.1.1:1', '[::1:22', 'user@host:22', `${'a'.repeat(254)}:1`]) {
      expect(parseTarget(bad).ok, bad).toBe(false);
    }
  });
});

describe('allow-lists', () => {
  it('parse comma-separated patterns, * for any port, spaces ignored, every problem named', () => {
    const list = parseAllowList(' 127.0.0.1:*, DB.local:5432 ,,[::1]:*');
    expect(list).toEqual({
      ok: true,
      value: [
        { host: '127.0.0.1', port: '*' },
        { host: 'db.local', port: 5432 },
        { host: '[::1]', port: '*' },
      ],
    });
    const bad = parseAllowList('127.0.0.1:*,db.local,x:0');
    expect(bad.ok).toBe(false);
    expect((bad as { problem: string }).problem).toMatch(/"db\.local" is not HOST:PORT.*; "0" is not a port from 1 to 65535 or \*/);
    expect(parseAllowList(' , ').ok).toBe(false);
    expect(parseAllowList(Array.from({ length: 65 }, (_, i) => `h${i}:1`).join(',')).ok).toBe(false);
    expect(parsePattern('*:22').ok).toBe(false); // any host is not a pattern: name them
  });

  it('match canonical hosts exactly and ports exactly or any', () => {
    const patterns = (parseAllowList('127.0.0.1:*,db.local:5432') as { value: Parameters<typeof isAllowed>[0] }).value;
    expect(isAllowed(patterns, target('127.0.0.1:22'))).toBe(true);
    expect(isAllowed(patterns, target('127.1:22'))).toBe(true); // the same address, spelled otherwise
    expect(isAllowed(patterns, target('DB.LOCAL:5432'))).toBe(true);
    expect(isAllowed(patterns, target('db.local:5433'))).toBe(false);
    expect(isAllowed(patterns, target('localhost:22'))).toBe(false); // another name: no DNS here
    expect(isAllowed(patterns, target('127.0.0.2:22'))).toBe(false);
  });

  it("allow the device's own loopback by default, under each of its names, and nothing else", () => {
    const defaults = (parseAllowList(DEFAULT_FORWARD_ALLOW.join(',')) as { value: Parameters<typeof isAllowed>[0] }).value;
    for (const t of ['127.0.0.1:5432', 'localhost:80', '[::1]:22']) expect(isAllowed(defaults, target(t)), t).toBe(true);
    for (const t of ['0.0.0.0:22', '10.0.0.1:22', '[::ffff:7f00:1]:22', 'example.com:80']) expect(isAllowed(defaults, target(t)), t).toBe(false);
  });
});
