import { describe, expect, it } from 'vitest';
import { digestOf, HolderTable } from '../../../cluster/holders';

const online = (current: object) => ({ kind: 'online', current: expect.objectContaining(current) });

describe('HolderTable', () => {
  it("an agent that moved from A to B is never made offline by A's late disconnect", () => {
    const t = new HolderTable();
    expect(t.online('dev', { node: 'A', generation: 7, since: 1_000 })).toEqual(online({ node: 'A' }));
    expect(t.online('dev', { node: 'B', generation: 3, since: 2_000 })).toEqual(online({ node: 'B' }));
    expect(t.offline('dev', { node: 'A', generation: 7 })).toEqual({ kind: 'unchanged' });
    expect(t.holder('dev')).toMatchObject({ node: 'B', generation: 3, since: 2_000 });
    expect(t.offline('dev', { node: 'B', generation: 3 })).toEqual({ kind: 'offline' });
    expect(t.holder('dev')).toBeUndefined();
  });

  it('a connection a node registered late, after the agent had gone elsewhere, ends without taking the device offline', () => {
    // The agent gave up on A's slow handshake at 1,000 and connected to B at 1,200; A finished
    // the handshake at 1,500 (the later connection, but a dead one) and then saw it close.
    const t = new HolderTable<{ v: string }>();
    t.online('dev', { node: 'B', generation: 3, since: 1_200, info: { v: 'b' } });
    expect(t.online('dev', { node: 'A', generation: 9, since: 1_500, info: { v: 'a' } })).toEqual(online({ node: 'A' }));
    expect(t.offline('dev', { node: 'A', generation: 9 })).toEqual(online({ node: 'B', info: { v: 'b' } }));
    expect(t.size).toBe(1);
    expect(t.holder('dev')?.node).toBe('B');
  });

  it('an older connection reported late is kept but does not become current', () => {
    const t = new HolderTable();
    t.online('dev', { node: 'B', generation: 3, since: 2_000 });
    expect(t.online('dev', { node: 'A', generation: 9, since: 1_000 })).toEqual({ kind: 'unchanged' });
    expect(t.holder('dev')?.node).toBe('B');
    // B's connection ends: A's is still there
    expect(t.offline('dev', { node: 'B', generation: 3 })).toEqual(online({ node: 'A' }));
  });

  it('on one node a later generation replaces an earlier one, even within the same millisecond', () => {
    const t = new HolderTable();
    t.online('dev', { node: 'A', generation: 1, since: 1_000 });
    expect(t.online('dev', { node: 'A', generation: 1, since: 1_000 })).toEqual({ kind: 'unchanged' }); // a snapshot repeats it
    expect(t.online('dev', { node: 'A', generation: 2, since: 1_000 })).toEqual(online({ generation: 2 }));
    expect(t.online('dev', { node: 'A', generation: 1, since: 1_000 })).toEqual({ kind: 'unchanged' }); // replaced already
    expect(t.offline('dev', { node: 'A', generation: 1 })).toEqual({ kind: 'unchanged' });
    expect(t.holder('dev')?.generation).toBe(2);
    expect(t.size).toBe(1);
  });

  it("drops a node's connections but those of the devices it still holds (a snapshot); devices held elsewhere stay online", () => {
    const t = new HolderTable();
    t.online('a1', { node: 'A', generation: 1, since: 1 });
    t.online('a2', { node: 'A', generation: 2, since: 1 });
    t.online('a3', { node: 'A', generation: 3, since: 1 });
    t.online('a3', { node: 'B', generation: 1, since: 2 });
    t.online('b1', { node: 'B', generation: 2, since: 1 });
    expect([...t.dropNode('A', new Set(['a2']))]).toEqual([['a1', { kind: 'offline' }]]); // a3 stays on B, unchanged
    expect([...t.dropNode('A')]).toEqual([['a2', { kind: 'offline' }]]);
    expect(t.size).toBe(2);
    expect(t.holder('a3')?.node).toBe('B');
  });

  it("keeps each node's digest as connections come and go, equal to the node's own over its agents", () => {
    const t = new HolderTable();
    expect(t.digest('A')).toBe(digestOf([]));
    t.online('d1', { node: 'A', generation: 1, since: 1 });
    t.online('d2', { node: 'A', generation: 2, since: 1 });
    t.online('d3', { node: 'B', generation: 1, since: 1 });
    t.online('d2', { node: 'A', generation: 5, since: 2 }); // replaces generation 2
    expect(t.digest('A')).toBe(
      digestOf([
        { deviceId: 'd2', generation: 5 },
        { deviceId: 'd1', generation: 1 },
      ]),
    );
    expect(t.digest('B')).toBe(digestOf([{ deviceId: 'd3', generation: 1 }]));
    t.offline('d1', { node: 'A', generation: 1 });
    expect(t.digest('A')).toBe(digestOf([{ deviceId: 'd2', generation: 5 }]));
    // a lost report shows: the node's own digest differs
    expect(t.digest('A')).not.toBe(
      digestOf([
        { deviceId: 'd2', generation: 5 },
        { deviceId: 'd9', generation: 1 },
      ]),
    );
    t.dropNode('A');
    expect(t.digest('A')).toBe(digestOf([]));
  });
});
