import { describe, expect, it } from 'vitest';
import { checkDiagArgs, DIAG_OPS } from '../../../cli/diag-ops';
import { CliError } from '../../../cli/errors';

function usage(fn: () => void): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(CliError);
    expect((err as CliError).exitCode).toBe(2);
    return (err as CliError).message;
  }
  throw new Error('no usage error');
}

describe('checkDiagArgs', () => {
  it('refuses an unknown op, listing the ops', () => {
    const message = usage(() => checkDiagArgs('bogus.op', {}));
    expect(message).toContain('bogus.op');
    for (const op of Object.keys(DIAG_OPS)) expect(message).toContain(op);
    usage(() => checkDiagArgs('constructor', {})); // not an op, though every object has one
  });

  it('takes each option only with the ops it belongs to', () => {
    expect(() => checkDiagArgs('log.tail', { path: '/var/log/syslog', lines: 5 })).not.toThrow();
    expect(() => checkDiagArgs('process.list', { limit: 5 })).not.toThrow();
    expect(() => checkDiagArgs(undefined, { limit: 5 })).not.toThrow(); // the summary's process list
    expect(() => checkDiagArgs('system.info', { path: undefined })).not.toThrow();
    expect(usage(() => checkDiagArgs('system.info', { path: '/x' }))).toBe('--path is not an option of system.info; it goes with log.tail');
    expect(usage(() => checkDiagArgs(undefined, { lines: 5 }))).toBe('--lines is not an option of the summary; it goes with log.tail');
    expect(usage(() => checkDiagArgs('log.tail', { path: '/x', limit: 3 }))).toContain('it goes with process.list');
  });

  it('wants a path for log.tail', () => {
    expect(usage(() => checkDiagArgs('log.tail', { lines: 5 }))).toContain('log.tail needs --path');
  });
});
