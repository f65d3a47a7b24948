import { describe, expect, it } from 'vitest';
import { AgentRegistry } from '../../../relay/registry';

describe('agent registry generations', () => {
  it('a late close of a replaced connection does not remove its successor', () => {
    const r = new AgentRegistry<string>();
    const first = r.attach('dev-1', 'socket-a', '1.0.0', 1).entry;
    const { entry: second, replaced } = r.attach('dev-1', 'socket-b', '1.0.0', 2);
    expect(replaced).toBe(first);
    expect(second.generation).toBeGreaterThan(first.generation);
    expect(r.detach(first)).toBe(false); // the old socket's close arrives late
    expect(r.get('dev-1')?.socket).toBe('socket-b');
    expect(r.detach(second)).toBe(true);
    expect(r.get('dev-1')).toBeUndefined();
    expect(r.size).toBe(0);
  });

  it('lists copies that later changes do not touch', () => {
    const r = new AgentRegistry<string>();
    const { entry } = r.attach('dev-1', 's', null, 5);
    const snapshot = r.list();
    entry.lastSeenAt = 99;
    expect(snapshot).toEqual([{ deviceId: 'dev-1', generation: 1, agentVersion: null, connectedAt: 5, lastSeenAt: 5 }]);
  });
});
