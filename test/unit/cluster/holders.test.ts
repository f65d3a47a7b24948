import { describe, expect, it } from 'vitest';
import { HolderTable } from '../../../cluster/holders';

describe('HolderTable', () => {
  it('an agent that moved from A to B is never made offline by A\'s late disconnect', () => {
    const t = new HolderTable();
    expect(t.online('dev', { node: 'A', generation: 7, since: 1_000 })).toBe('online');
    expect(t.online('dev', { node: 'B', generation: 3, since: 2_000 })).toBe('online');
    expect(t.offline('dev', { node: 'A', generation: 7 })).toBe(false);
    expect(t.holder('dev')).toEqual({ node: 'B', generation: 3, since: 2_000 });
    expect(t.offline('dev', { node: 'B', generation: 3 })).toBe(true);
    expect(t.holder('dev')).toBeUndefined();
  });

  it('a connection reported late, after a later one, is stale and changes nothing', () => {
    const t = new HolderTable();
    t.online('dev', { node: 'B', generation: 3, since: 2_000 });
    expect(t.online('dev', { node: 'A', generation: 9, since: 1_000 })).toBe('stale');
    // on one node, the later generation wins even within the same millisecond
    t.online('dev', { node: 'B', generation: 5, since: 2_000 });
    expect(t.online('dev', { node: 'B', generation: 4, since: 2_000 })).toBe('stale');
    expect(t.holder('dev')?.generation).toBe(5);
  });

  it('a snapshot repeating the current connection is known; a reconnection on the same node ends the old one', () => {
    const t = new HolderTable();
    t.online('dev', { node: 'A', generation: 1, since: 1_000 });
    expect(t.online('dev', { node: 'A', generation: 1, since: 1_000 })).toBe('known');
    expect(t.online('dev', { node: 'A', generation: 2, since: 1_500 })).toBe('online');
    expect(t.offline('dev', { node: 'A', generation: 1 })).toBe(false);
    expect(t.size).toBe(1);
  });

  it('drops a lost node\'s devices, but those it still holds (a snapshot) and those held elsewhere', () => {
    const t = new HolderTable();
    t.online('a1', { node: 'A', generation: 1, since: 1 });
    t.online('a2', { node: 'A', generation: 2, since: 1 });
    t.online('a3', { node: 'A', generation: 3, since: 1 });
    t.online('b1', { node: 'B', generation: 1, since: 1 });
    expect(t.dropNode('A', new Set(['a2'])).sort()).toEqual(['a1', 'a3']);
    expect(t.dropNode('A')).toEqual(['a2']);
    expect(t.size).toBe(1);
    expect(t.holder('b1')?.node).toBe('B');
  });
});
