/**
 * The one-file agent's PTY library cache (cmd/sea/native-pty.ts): written once to a private,
 * content-addressed file, checked before it is loaded, never taken from a directory another user
 * could write; the loaded library is node-pty's real one.
 */
import { createHash } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cacheDirCandidates, loadPtyNative } from '../../../cmd/sea/native-pty';
import { tempDir } from '../../helpers/temp';

const ptyDir = dirname(createRequire(__filename).resolve('node-pty/package.json'));
const library = readFileSync(join(ptyDir, 'build', 'Release', 'pty.node'));
const name = `pty-${createHash('sha256').update(library).digest('hex')}.node`;
const uid = process.getuid!();

describe('the PTY library cache', () => {
  it('prefers the runtime dir, then systemd state, then the temp dir, each per user', () => {
    expect(cacheDirCandidates({ XDG_RUNTIME_DIR: '/run/user/7', STATE_DIRECTORY: '/var/lib/tether-agent', TMPDIR: '/t' }, 7)).toEqual([
      '/run/user/7/tether-agent',
      '/var/lib/tether-agent/native',
      '/t/tether-agent-7',
    ]);
  });

  it('writes the library into a 0700 directory, read-only, and loads it', () => {
    const run = tempDir('tether-pty-cache-');
    const pty = loadPtyNative(library, { XDG_RUNTIME_DIR: run, TMPDIR: run }) as { fork: unknown };
    expect(typeof pty.fork).toBe('function');
    const dir = join(run, 'tether-agent');
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(readdirSync(dir)).toEqual([name]);
    expect(statSync(join(dir, name)).mode & 0o777).toBe(0o500);
  });

  it('replaces a cached file whose content is not the library, and removes older versions', () => {
    const run = tempDir('tether-pty-cache-');
    const dir = join(run, 'tether-agent');
    mkdirSync(dir, { mode: 0o700 });
    writeFileSync(join(dir, name), 'not a library', { mode: 0o500 });
    writeFileSync(join(dir, `pty-${'0'.repeat(64)}.node`), 'an older one');
    loadPtyNative(library, { XDG_RUNTIME_DIR: run, TMPDIR: run });
    expect(readdirSync(dir)).toEqual([name]);
    expect(readFileSync(join(dir, name)).equals(library)).toBe(true);
  });

  it('skips a directory others can write, and says where it tried when none will do', () => {
    const open = tempDir('tether-pty-open-');
    mkdirSync(join(open, 'tether-agent'));
    chmodSync(join(open, 'tether-agent'), 0o777);
    const fallback = tempDir('tether-pty-fallback-');
    loadPtyNative(library, { XDG_RUNTIME_DIR: open, TMPDIR: fallback });
    expect(readdirSync(join(open, 'tether-agent'))).toEqual([]);
    expect(readdirSync(join(fallback, `tether-agent-${uid}`))).toEqual([name]);

    mkdirSync(join(fallback, 'x'));
    const shared = join(fallback, 'x');
    mkdirSync(join(shared, `tether-agent-${uid}`), { mode: 0o777 });
    chmodSync(join(shared, `tether-agent-${uid}`), 0o777);
    expect(() => loadPtyNative(library, { TMPDIR: shared })).toThrow(/cannot load the PTY library: .*not a private directory/);
  });
});
