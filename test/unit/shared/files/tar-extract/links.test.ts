/**
 * Symbolic links in uploads, and refusals that leave nothing behind, on the real extractor in
 * temporary directories. A link is judged by where it leads once every entry of its archive is
 * in place, and after any later upload; a refused archive leaves the tree exactly as it was.
 */
import fc from 'fast-check';
import { mkdirSync, readdirSync, readFileSync, readlinkSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openUploadJournal } from '../../../../../agent/file-transfer/upload-journal';
import { silentLogger } from '../../../../../shared/log';
import { createExtraction } from '../../../../../shared/files/tar-extract';
import { tempDir } from '../../../../helpers/stack';
import { linksLeadingOut, tarOf, treeDigest } from '../../../../helpers/tar';

type Entry = Parameters<typeof tarOf>[0][number];
const dir = (name: string): Entry => ({ header: { name: `${name}/`, type: 'directory', mode: 0o755 } });
const file = (name: string, content = name): Entry => ({ header: { name, type: 'file', mode: 0o644 }, content });
const link = (name: string, target: string): Entry => ({ header: { name, type: 'symlink', linkname: target } });

interface Tree {
  root: string;
  outside: string;
  /** The links that led out before any upload (the operator's own). */
  baseline: string[];
}

/**
 * A files root as a device might have it: files, a directory, a link inside (`sub/top`, to the
 * root itself), an operator's link that leads out (`escape`), and a secret next to the root.
 */
function deviceTree(): Tree {
  const root = realpathSync(tempDir('tether-root-'));
  const outside = realpathSync(tempDir('tether-outside-'));
  writeFileSync(join(outside, 'secret.txt'), 'do not read');
  writeFileSync(join(root, 'plain.txt'), 'plain\n');
  mkdirSync(join(root, 'dir'));
  writeFileSync(join(root, 'dir', 'kept.txt'), 'kept\n');
  mkdirSync(join(root, 'sub'));
  symlinkSync('..', join(root, 'sub', 'top'));
  symlinkSync(outside, join(root, 'escape'));
  symlinkSync('plain.txt', join(root, 'old-link'));
  return { root, outside, baseline: linksLeadingOut(root) };
}

/** Uploads `entries` into `into` below the root as the agent does; resolves with the refusal, if any. */
async function upload(root: string, entries: Entry[], into = ''): Promise<unknown> {
  const x = createExtraction(root, join(root, into), { maxBytes: 0, maxEntries: 1000 });
  x.input.on('error', () => {}); // a refusal destroys the input; commit() reports it
  x.input.write(await tarOf(entries));
  const err = await x.commit().then(
    () => undefined,
    (e: unknown) => e,
  );
  if (err) await x.abort(err);
  return err;
}

describe('symbolic links that would lead outside the files root', () => {
  const escapes: Array<[string, (t: Tree) => Entry[], string, string]> = [
    ['climbs through a link made earlier in the archive', () => [dir('p'), link('p/q', '..'), link('esc', 'p/q/..')], 'path_outside_root', 'esc'],
    [
      'reaches a file outside through a link made earlier',
      (t) => [dir('p'), link('p/q', '..'), link('escf', `p/q/../${basename(t.outside)}/secret.txt`)],
      'path_outside_root',
      'escf',
    ],
    ['climbs through a link made later in the archive', () => [link('esc', 'p/q/..'), dir('p'), link('p/q', '..')], 'path_outside_root', 'esc'],
    [
      'climbs through a chain of links',
      () => [dir('x'), link('x/up', '..'), link('y', 'x/up'), dir('z'), link('z/w', '../y'), link('esc', 'z/w/..')],
      'path_outside_root',
      'esc',
    ],
    ['climbs through a link to a link', () => [link('l1', 'sub/top'), link('esc', 'l1/..')], 'path_outside_root', 'esc'],
    ['is absolute', () => [link('abs', '/etc')], 'path_outside_root', 'abs'],
    ['is absolute, even when it names a file inside the root', (t) => [link('absin', join(t.root, 'plain.txt'))], 'path_outside_root', 'absin'],
    ['climbs above the root from a subdirectory', () => [link('dir/up', '../../etc')], 'path_outside_root', 'dir/up'],
    ['goes through an existing link that leads out', () => [link('via', 'escape/secret.txt')], 'path_outside_root', 'via'],
    ['points at an existing link that leads out', () => [link('to', 'escape')], 'path_outside_root', 'to'],
    ['climbs through an existing link inside the root', () => [link('esc', 'sub/top/..')], 'path_outside_root', 'esc'],
    ['climbs out of a file that a later upload could replace with a link', () => [link('g', 'plain.txt/..')], 'path_outside_root', 'g'],
    ['climbs out of a directory that does not exist', () => [dir('p'), link('esc', 'p/y/../..')], 'path_outside_root', 'esc'],
    [
      'replaces, later in the archive, a directory it climbs through',
      () => [dir('w'), dir('w/d'), link('esc', 'w/d/../..'), link('w/d', '..')],
      'exists',
      'w/d',
    ],
    [
      'comes at the end, after good entries',
      () => [file('good.txt'), dir('new'), file('new/f'), link('fine', 'new/f'), dir('p'), link('p/q', '..'), link('esc', 'p/q/..')],
      'path_outside_root',
      'esc',
    ],
  ];

  it.each(escapes)('refuses a link that %s, changing nothing', async (_shape, entries, code, entry) => {
    const t = deviceTree();
    const before = treeDigest(t.root);
    const err = await upload(t.root, entries(t));
    expect(err).toMatchObject({ name: 'OpError', code, message: expect.stringContaining(entry) });
    expect(treeDigest(t.root)).toEqual(before);
    expect(linksLeadingOut(t.root)).toEqual(t.baseline);
    expect(readdirSync(t.outside)).toEqual(['secret.txt']);
  });

  const sequences: Array<[string, Entry[][]]> = [
    ['a missing step, later made a link to the root', [[dir('p'), link('esc', 'p/y/../..')], [link('p/y', '..')]]],
    ['a file, later replaced by a link to the root', [[link('g', 'plain.txt/..')], [link('plain.txt', '.')]]],
    ['a link, later replaced by a link to the root', [[link('cur', 'dir'), link('esc', 'cur/..')], [link('cur', 'sub/top')]]],
  ];

  it.each(sequences)('no sequence of uploads makes a link lead out: %s', async (_shape, uploads) => {
    const t = deviceTree();
    for (const entries of uploads) {
      await upload(t.root, entries);
      expect(linksLeadingOut(t.root)).toEqual(t.baseline);
    }
  });

  it('a property: whatever archives are uploaded, no link leads out and a refusal changes nothing', async () => {
    // A small world, so that entries meet one another by name: directories `a` and `b`, files
    // and links below them and beside them (a name may come twice, as another kind, or be the
    // existing directory `dir`); targets climb, or go down through a name of that world (perhaps
    // a link) and may climb back.
    const deep = fc.constantFrom('a/x', 'a/y', 'b/x', 'b/y');
    const name = fc.oneof(deep, fc.constantFrom('c', 'd', 'dir'));
    const through = fc.tuple(fc.oneof(name, fc.constantFrom('a', 'b')), fc.constantFrom(0, 1, 1, 2), fc.constantFrom('', '/x', '/plain.txt'));
    const target = fc.oneof(
      { weight: 2, arbitrary: fc.constant('..') },
      { weight: 1, arbitrary: fc.constantFrom('../..', '.', 'sub/top', 'escape') },
      { weight: 3, arbitrary: through.map(([n, up, tail]) => `${n}${'/..'.repeat(up)}${tail}`) },
    );
    const entry = fc.oneof(
      { weight: 1, arbitrary: fc.constantFrom('a', 'b').map(dir) },
      { weight: 1, arbitrary: name.map((n) => file(n)) },
      { weight: 4, arbitrary: fc.tuple(name, target).map(([n, to]) => link(n, to)) },
    );
    const entries = fc.array(entry, { maxLength: 6 });
    const uploads = fc.array(fc.record({ into: fc.constantFrom('', 'sub', 'dir'), entries }), { minLength: 1, maxLength: 3 });
    await fc.assert(
      fc.asyncProperty(uploads, async (sequence) => {
        const t = deviceTree();
        for (const { into, entries } of sequence) {
          const before = treeDigest(t.root);
          const err = await upload(t.root, entries, into);
          if (err) {
            expect(err).toMatchObject({ name: 'OpError' });
            expect(treeDigest(t.root)).toEqual(before);
          }
          expect(linksLeadingOut(t.root)).toEqual(t.baseline);
        }
        expect(readdirSync(t.outside)).toEqual(['secret.txt']);
      }),
      { numRuns: Number(process.env.LINK_RUNS ?? 1000) },
    );
  });
});

describe('symbolic links that stay inside keep working', () => {
  const fine: Array<[string, Entry[], Record<string, string>]> = [
    [
      'a link to a directory the archive makes after it',
      [link('current', 'releases/v2'), dir('releases'), dir('releases/v2'), file('releases/v2/app', 'v2')],
      { 'current/app': 'v2' },
    ],
    [
      'a chain of library links',
      [link('lib/libz.so', 'libz.so.1'), link('lib/libz.so.1', 'libz.so.1.3'), file('lib/libz.so.1.3', 'elf')],
      { 'lib/libz.so': 'elf' },
    ],
    [
      'node_modules/.bin links up into a package',
      [link('node_modules/.bin/tsc', '../typescript/bin/tsc'), file('node_modules/typescript/bin/tsc', '#!tsc')],
      { 'node_modules/.bin/tsc': '#!tsc' },
    ],
    [
      'links to the root, to their own directory and to a sibling',
      [link('sub2/up', '..'), link('sub2/self', '.'), link('sub2/sibling', '../plain.txt')],
      { 'sub2/up/plain.txt': 'plain\n', 'sub2/self/sibling': 'plain\n', 'sub2/sibling': 'plain\n' },
    ],
    ['a link down and back up through real directories', [link('dir/deep/x', '../../dir/kept.txt')], { 'dir/deep/x': 'kept\n' }],
    [
      'links to and through an existing link inside the root',
      [link('viatop', 'sub/top'), link('through', 'sub/top/plain.txt')],
      { 'viatop/plain.txt': 'plain\n', through: 'plain\n' },
    ],
    [
      'links replacing a file and a link',
      [link('plain.txt', 'dir/kept.txt'), link('old-link', 'dir')],
      { 'plain.txt': 'kept\n', 'old-link/kept.txt': 'kept\n' },
    ],
  ];

  it.each(fine)('accepts %s', async (_shape, entries, reads) => {
    const t = deviceTree();
    expect(await upload(t.root, entries)).toBeUndefined();
    for (const [path, content] of Object.entries(reads)) expect(readFileSync(join(t.root, path), 'utf8'), path).toBe(content);
    expect(linksLeadingOut(t.root)).toEqual(t.baseline);
    expect(readdirSync(t.root).filter((n) => n.endsWith('.part'))).toEqual([]);
  });

  it('accepts a dangling link and a link to a link an earlier upload made', async () => {
    const t = deviceTree();
    expect(await upload(t.root, [link('later', 'not-yet.txt')])).toBeUndefined();
    expect(readlinkSync(join(t.root, 'later'))).toBe('not-yet.txt');
    expect(await upload(t.root, [link('lib/libz.so.1', 'libz.so.1.3'), file('lib/libz.so.1.3', 'elf')])).toBeUndefined();
    expect(await upload(t.root, [link('libz.so', 'libz.so.1')], 'lib')).toBeUndefined();
    expect(readFileSync(join(t.root, 'lib', 'libz.so'), 'utf8')).toBe('elf');
  });
});

describe('a refused upload leaves the tree exactly as it was', () => {
  const refusals: Array<[string, Entry[], string]> = [
    ['a directory, a file in it, then a link of the same name', [dir('sd'), file('sd/f.txt'), link('sd', 'other')], 'exists'],
    ['a file, then a directory of the same name', [file('good.txt'), file('x'), dir('x')], 'exists'],
    ['a file, then a file below it', [file('good.txt'), file('x'), file('x/y')], 'exists'],
    ['a link, then a file of the same name', [file('good.txt'), link('l', 'plain.txt'), file('l')], 'exists'],
    ['a file, then a link of the same name', [file('good.txt'), file('l'), link('l', 'plain.txt')], 'exists'],
    ['a link, then a file below it', [file('good.txt'), link('l', 'dir'), file('l/y')], 'exists'],
    ['a link over an existing directory', [file('good.txt'), link('dir', 'sub')], 'exists'],
    [
      'a refused entry at the end, after good ones',
      [file('plain.txt', 'overwritten'), dir('new'), file('new/f'), link('new/l', 'f'), { header: { name: 'hard', type: 'link', linkname: 'plain.txt' } }],
      'path_outside_root',
    ],
    [
      'an escape at the end, after good ones',
      [file('plain.txt', 'overwritten'), dir('new'), file('new/f'), link('old-link', 'dir'), dir('p'), link('p/q', '..'), link('esc', 'p/q/..')],
      'path_outside_root',
    ],
  ];

  it('after each of several refused uploads in a row, names, types and contents are unchanged', async () => {
    const t = deviceTree();
    const before = treeDigest(t.root);
    for (const [shape, entries, code] of refusals) {
      const err = await upload(t.root, entries);
      expect(treeDigest(t.root), shape).toEqual(before);
      expect(err, shape).toMatchObject({ name: 'OpError', code });
    }
    // The same archives into a directory the upload made itself (as the agent does for a missing
    // target): that directory goes too. (A link over an existing directory needs the directory.)
    for (const [shape, entries] of refusals.filter(([shape]) => shape !== 'a link over an existing directory')) {
      mkdirSync(join(t.root, 'pc'));
      const x = createExtraction(t.root, join(t.root, 'pc'), { maxBytes: 0, maxEntries: 1000, createdDirs: [join(t.root, 'pc')] });
      x.input.on('error', () => {});
      x.input.write(await tarOf(entries));
      const err = await x.commit().then(
        () => undefined,
        (e: unknown) => e,
      );
      await x.abort(err);
      expect(treeDigest(t.root), shape).toEqual(before);
      expect(err, shape).toMatchObject({ name: 'OpError' });
    }
  });
});

describe('an agent killed while it places links', () => {
  it('removes their temporary names when it starts again, never what they point at', () => {
    const t = deviceTree();
    const state = tempDir('tether-state-');
    const journal = openUploadJournal(state, 'dev-1', silentLogger);
    const temp = join(t.root, 'dir', `.lib.so.tether-${'0a'.repeat(6)}.part`);
    journal.begin().file(temp); // as the extractor does before making the temporary link
    symlinkSync('kept.txt', temp);
    journal.close(); // killed: the upload never wrote its last line
    openUploadJournal(state, 'dev-1', silentLogger).close();
    expect(readdirSync(join(t.root, 'dir'))).toEqual(['kept.txt']);
    expect(readFileSync(join(t.root, 'dir', 'kept.txt'), 'utf8')).toBe('kept\n');
  });
});
