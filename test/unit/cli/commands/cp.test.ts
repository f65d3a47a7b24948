import { describe, expect, it } from 'vitest';
import { parseRemote } from '../../../../cli/commands/cp';

describe('parseRemote (DEVICE:PATH)', () => {
  it('splits a device and a path at the first colon', () => {
    expect(parseRemote('laptop:/etc/hostname')).toEqual({ device: 'laptop', path: '/etc/hostname' });
    expect(parseRemote('dev-1.local_x:relative/a:b')).toEqual({ device: 'dev-1.local_x', path: 'relative/a:b' });
  });

  it("reads an empty path as the root of the device's files", () => {
    expect(parseRemote('laptop:')).toEqual({ device: 'laptop', path: '/' });
  });

  it('keeps paths that are clearly local local', () => {
    for (const local of ['./a:b', '/x:y', '../up:there', 'plain', 'dir/file']) expect(parseRemote(local)).toBeUndefined();
  });

  it('refuses device ids the API would not accept as one', () => {
    expect(parseRemote('has space:/x')).toBeUndefined();
    expect(parseRemote(`${'d'.repeat(65)}:/x`)).toBeUndefined();
    expect(parseRemote(`${'d'.repeat(64)}:/x`)).toEqual({ device: 'd'.repeat(64), path: '/x' });
  });

  it('keeps a newline in the path (the whole argument is the path)', () => {
    expect(parseRemote('laptop:a\nb')).toEqual({ device: 'laptop', path: 'a\nb' });
  });
});
