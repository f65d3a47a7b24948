/** The logger's two formats: JSON lines (the default, unchanged) and text lines for a terminal, with the level threshold. */
import { describe, expect, it } from 'vitest';
import { createLogger, type LoggerOptions } from '../../../shared/log';

function collect(options: Omit<LoggerOptions, 'write'>) {
  const lines: string[] = [];
  const log = createLogger({ ...options, write: (line) => lines.push(line) }, { component: 'agent', device_id: 'laptop' });
  return { log, lines };
}

describe('text format', () => {
  it('writes `HH:MM:SS level component: message key=value`, one line per record', () => {
    const { log, lines } = collect({ level: 'warn', format: 'text' });
    log.warn('connection to broker failed; reconnecting', { err: 'connect ECONNREFUSED 127.0.0.1:9', delay_ms: 812, ok: true });
    log.error('this device was deleted from the registry');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(
      /^\d\d:\d\d:\d\d warn  agent: connection to broker failed; reconnecting device_id=laptop err="connect ECONNREFUSED 127.0.0.1:9" delay_ms=812 ok=true\n$/,
    );
    expect(lines[1]).toMatch(/^\d\d:\d\d:\d\d error agent: this device was deleted from the registry device_id=laptop\n$/);
  });

  it('shows the local time of day', () => {
    const { log, lines } = collect({ level: 'info', format: 'text' });
    const before = new Date();
    log.info('x');
    const shown = lines[0]!.slice(0, 8);
    const after = new Date();
    expect([before.toTimeString().slice(0, 8), after.toTimeString().slice(0, 8)]).toContain(shown);
  });

  it('quotes values that are not one word, writes objects and errors readably, leaves out undefined', () => {
    const { log, lines } = collect({ level: 'info', format: 'text' });
    log.info('upload done', { path: 'a b/c', empty: '', files: 3, where: { dir: '/srv' }, gone: undefined });
    expect(lines[0]).toMatch(/ agent: upload done device_id=laptop path="a b\/c" empty="" files=3 where=\{"dir":"\/srv"\}\n$/);
  });

  it('shows an error by its message, its stack on the indented lines below', () => {
    const { log, lines } = collect({ level: 'info', format: 'text' });
    const err = new Error('disk full');
    log.error('uncaught error', { kind: 'exception', err });
    const [first, ...frames] = lines[0]!.trimEnd().split('\n');
    expect(first).toMatch(/ error agent: uncaught error device_id=laptop kind=exception err="disk full"$/);
    expect(frames.length).toBeGreaterThan(0);
    expect(frames).toEqual(
      err
        .stack!.split('\n')
        .slice(1)
        .map((f) => `    ${f.trim()}`),
    );
  });

  it('escapes control characters, so a logged name cannot drive the terminal', () => {
    const { log, lines } = collect({ level: 'info', format: 'text' });
    log.info('name \u001b[2J here', { path: 'x\u001b]0;pwned\u0007', c1: 'a\u009bb', newline: 'one\ntwo' });
    expect(lines).toHaveLength(1);
    expect(lines[0]!.slice(0, -1)).not.toMatch(/[\u0000-\u001f\u007f-\u009f]/);
    expect(lines[0]).toContain('name \\u001b[2J here');
    expect(lines[0]).toContain('path="x\\u001b]0;pwned\\u0007"');
    expect(lines[0]).toContain('c1="a\\u009bb"');
    expect(lines[0]).toContain('newline="one\\ntwo"');
  });

  it('keeps the level threshold', () => {
    const { log, lines } = collect({ level: 'warn', format: 'text' });
    log.debug('d');
    log.info('i');
    expect(lines).toEqual([]);
  });
});

describe('json format', () => {
  it('is the default: one JSON object per line with time, level, msg and the fields', () => {
    const { log, lines } = collect({ level: 'info' });
    log.info('connected to broker', { heartbeat_ms: 20000 });
    log.child({ session_id: 's1' }).warn('failed', { err: new Error('boom') });
    expect(lines.every((l) => l.endsWith('\n'))).toBe(true);
    const [first, second] = lines.map((l) => JSON.parse(l));
    expect(first).toEqual({
      time: expect.any(String),
      level: 'info',
      msg: 'connected to broker',
      component: 'agent',
      device_id: 'laptop',
      heartbeat_ms: 20000,
    });
    expect(new Date(first.time).toISOString()).toBe(first.time);
    expect(second).toMatchObject({ level: 'warn', session_id: 's1', err: { name: 'Error', message: 'boom' } });
  });
});
