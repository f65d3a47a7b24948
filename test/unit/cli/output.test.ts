import { describe, expect, it } from 'vitest';
import { formatBytes, formatDuration, printJson, table } from '../../../cli/output';

describe('table', () => {
  it('aligns columns to their widest cell, upper-cases headers, and shows a dash for no value', () => {
    const text = table(
      [
        { name: 'a', size: 1, note: null },
        { name: 'longer name', size: 12345, note: 'x' },
      ],
      ['name', 'size', 'note'],
    );
    expect(text).toBe(['NAME         SIZE   NOTE', 'a            1      -', 'longer name  12345  x', ''].join('\n'));
  });

  it('never pads the last column', () => {
    const lines = table(
      [
        { a: 'x', b: 'y' },
        { a: 'x', b: 'much longer' },
      ],
      ['a', 'b'],
    ).split('\n');
    expect(lines.map((l) => l.endsWith(' '))).toEqual([false, false, false, false]);
  });
});

describe('formatBytes', () => {
  it('uses binary units, one decimal below 100, none from 100', () => {
    expect(formatBytes(0)).toBe('0 B');
    expect(formatBytes(1023)).toBe('1023 B');
    expect(formatBytes(1024)).toBe('1.0 KiB');
    expect(formatBytes(2 * 1024 * 1024 + 3)).toBe('2.0 MiB');
    expect(formatBytes(150 * 1024 * 1024)).toBe('150 MiB');
    expect(formatBytes(3 * 1024 ** 5)).toBe('3072 TiB');
  });
});

describe('formatDuration', () => {
  it('shows seconds, minutes and seconds, or hours and minutes', () => {
    expect(formatDuration(-3)).toBe('0s');
    expect(formatDuration(59.4)).toBe('59s');
    expect(formatDuration(61)).toBe('1m01s');
    expect(formatDuration(3600 + 5 * 60 + 59)).toBe('1h05m');
  });
});

describe('printJson', () => {
  it('prints indented JSON and a newline on stdout only', () => {
    const out = { stdout: '', stderr: '' };
    printJson({ stdout: (t) => (out.stdout += t), stderr: (t) => (out.stderr += t) }, { a: [1] });
    expect(out).toEqual({ stdout: '{\n  "a": [\n    1\n  ]\n}\n', stderr: '' });
  });
});
