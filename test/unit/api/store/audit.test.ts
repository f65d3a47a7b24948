/** The remote-access audit log: events appended, listed newest first by insertion, filtered (owner included, never shown), paged with totals. */
import { beforeEach, describe, expect, it } from 'vitest';
import type { AuditEvent } from '../../../../api/store/audit';
import { type Store } from '../../../../api/store/index';
import { storeForEachTest } from '../../../helpers/store';

type NewEvent = Parameters<Store['audit']['append']>[0];

const event = (over: Partial<NewEvent>): NewEvent => ({
  event: 'session.opened',
  session_id: 's1',
  device_id: 'dev-1',
  protocol: 'shell',
  actor: 'ann',
  owner: 'ann',
  reason: null,
  at: '2026-01-01T00:00:00.000Z',
  trace_id: 'trace-1',
  targets: null,
  ...over,
});

describe('audit repository', () => {
  const store = storeForEachTest();

  it('reads back what was appended, with an id and without the owner', async () => {
    await store.audit.append(event({ event: 'session.closed', actor: 'system', reason: 'expired' }));
    const { items, total } = await store.audit.list({ limit: 10, offset: 0 });
    expect(total).toBe(1);
    expect(items[0]).toEqual<AuditEvent>({
      id: expect.any(Number) as number,
      event: 'session.closed',
      session_id: 's1',
      device_id: 'dev-1',
      protocol: 'shell',
      actor: 'system',
      reason: 'expired',
      at: '2026-01-01T00:00:00.000Z',
      trace_id: 'trace-1',
      targets: null,
    });
    expect(items[0]).not.toHaveProperty('owner');
  });

  it("keeps a port-forward session's targets", async () => {
    await store.audit.append(event({ protocol: 'port-forward', targets: ['127.0.0.1:5432', 'localhost:80'] }));
    expect((await store.audit.list({ limit: 10, offset: 0 })).items[0]).toMatchObject({
      protocol: 'port-forward',
      targets: ['127.0.0.1:5432', 'localhost:80'],
    });
  });

  describe('list', () => {
    beforeEach(async () => {
      // Appended in this order; the times are not in order, the listing follows the appends.
      await store.audit.append(event({ session_id: 's1', at: '2026-01-01T00:05:00.000Z', trace_id: 'e1' }));
      await store.audit.append(event({ session_id: 's2', device_id: 'dev-2', actor: 'bob', owner: 'bob', at: '2026-01-01T00:01:00.000Z', trace_id: 'e2' }));
      await store.audit.append(
        event({ session_id: 's1', event: 'session.closed', actor: 'bob', reason: 'closed', at: '2026-01-01T00:06:00.000Z', trace_id: 'e3' }),
      );
      await store.audit.append(
        event({
          session_id: 's2',
          device_id: 'dev-2',
          event: 'session.expired',
          actor: 'system',
          owner: 'bob',
          reason: 'expired',
          at: '2026-01-01T00:07:00.000Z',
          trace_id: 'e4',
        }),
      );
    });
    const traces = async (q: Partial<Parameters<Store['audit']['list']>[0]>) => {
      const { items, total } = await store.audit.list({ limit: 100, offset: 0, ...q });
      return { traces: items.map((e) => e.trace_id), total };
    };

    it('lists newest first by when they were appended', async () => {
      expect(await traces({})).toEqual({ traces: ['e4', 'e3', 'e2', 'e1'], total: 4 });
    });

    it('filters by session, device, event, actor, owner and strictly after `since`', async () => {
      expect((await traces({ session_id: 's1' })).traces).toEqual(['e3', 'e1']);
      expect((await traces({ device_id: 'dev-2' })).traces).toEqual(['e4', 'e2']);
      expect((await traces({ event: 'session.expired' })).traces).toEqual(['e4']);
      expect((await traces({ actor: 'bob' })).traces).toEqual(['e3', 'e2']);
      // bob closed ann's session: that event is ann's to see, not bob's
      expect((await traces({ owner: 'ann' })).traces).toEqual(['e3', 'e1']);
      expect((await traces({ owner: 'bob' })).traces).toEqual(['e4', 'e2']);
      expect((await traces({ since: '2026-01-01T00:05:00.000Z' })).traces).toEqual(['e4', 'e3']);
      expect(await traces({ owner: 'bob', event: 'session.opened' })).toEqual({ traces: ['e2'], total: 1 });
    });

    it('pages with the total of the whole filter', async () => {
      expect(await traces({ limit: 3, offset: 0 })).toEqual({ traces: ['e4', 'e3', 'e2'], total: 4 });
      expect(await traces({ limit: 3, offset: 3 })).toEqual({ traces: ['e1'], total: 4 });
      expect(await traces({ owner: 'ann', limit: 1, offset: 1 })).toEqual({ traces: ['e1'], total: 2 });
    });
  });
});
