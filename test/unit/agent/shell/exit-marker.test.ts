import { describe, expect, it } from 'vitest';
import { ExitMarkerScanner } from '../../../../agent/shell/exit-marker';

const marker = (nonce: string, code: number) => `\x1b]tether-exit;${nonce};${code}\x07`;

function feed(scanner: ExitMarkerScanner, chunks: string[]) {
  let output = '';
  let exitCode: number | undefined;
  for (const c of chunks) {
    const r = scanner.push(Buffer.from(c, 'latin1'));
    output += r.output.toString('latin1');
    exitCode ??= r.exitCode;
  }
  return { output, exitCode };
}

describe('shell exit marker', () => {
  it('finds the marker and drops it and what follows', () => {
    const r = feed(new ExitMarkerScanner('n1'), [`hello\r\n${marker('n1', 3)}junk`]);
    expect(r).toEqual({ output: 'hello\r\n', exitCode: 3 });
  });

  it('finds a marker split at every possible point', () => {
    const stream = `abc${marker('nonce42', 127)}`;
    for (let i = 1; i < stream.length; i++) {
      for (let j = i; j < stream.length; j++) {
        const r = feed(new ExitMarkerScanner('nonce42'), [stream.slice(0, i), stream.slice(i, j), stream.slice(j)]);
        expect(r, `${i},${j}`).toEqual({ output: 'abc', exitCode: 127 });
      }
    }
  });

  it('ignores markers with another nonce and loses no byte of ordinary output', () => {
    const scanner = new ExitMarkerScanner('right');
    const text = `a\x1b]tether-exit;wrong;0\x07b\x1b]tether-e`;
    const r = feed(scanner, [text]);
    expect(r.exitCode).toBeUndefined();
    expect(r.output + scanner.flush().toString('latin1')).toBe(text);
  });
});
