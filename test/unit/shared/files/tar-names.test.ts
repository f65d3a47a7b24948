/** Property: whatever a tar entry is called, an accepted name stays inside the target. */
import fc from 'fast-check';
import { isAbsolute, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkEntryName, MAX_ENTRY_NAME, MAX_NAME_COMPONENT } from '../../../../shared/files/tar-names';

const piece = fc.oneof(
  fc.constantFrom('..', '.', '', '/', '\\', '//', '\0', 'C:', 'c:\\', '~', '%2e%2e', '…', '．．', 'a'.repeat(256)),
  fc.string({ unit: 'grapheme', maxLength: 12 }),
  fc.string({ unit: 'binary', maxLength: 12 }),
);
const name = fc.array(piece, { maxLength: 8 }).chain((parts) => fc.constantFrom(parts.join('/'), parts.join('\\'), parts.join('')));

describe('checkEntryName', () => {
  it('accepts only names whose every segment is plain and whose path stays inside', () => {
    const target = '/srv/files/target';
    fc.assert(
      fc.property(name, (n) => {
        const check = checkEntryName(n);
        if (!check.ok) {
          expect(['path_outside_root', 'bad_params']).toContain(check.problem.code);
          return;
        }
        expect(n.length).toBeLessThanOrEqual(MAX_ENTRY_NAME);
        for (const s of check.segments) {
          expect(s).not.toMatch(/^\.\.?$|[/\\\0]/);
          expect(s).not.toBe('');
          expect(Buffer.byteLength(s)).toBeLessThanOrEqual(MAX_NAME_COMPONENT);
        }
        const at = resolve(join(target, ...check.segments));
        const rel = relative(target, at);
        expect(rel === '..' || rel.startsWith('../') || isAbsolute(rel)).toBe(false);
      }),
      { numRuns: 5000 },
    );
  });

  it('refuses the classic escapes', () => {
    for (const bad of ['../x', 'a/../../x', '/etc/passwd', '\\\\server\\share', 'C:\\Windows', 'a\\..\\..\\x', 'a/\0/b', `${'a'.repeat(256)}/b`]) {
      expect(checkEntryName(bad).ok, bad).toBe(false);
    }
  });
});
