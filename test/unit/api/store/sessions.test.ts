/** The session repository: one open session per protocol per device, close once, filters and newest-first paging, the due and next-expiry queries (token expiry included), and byte counter flushes. */
import { beforeEach, describe, expect, it } from 'vitest';
import { isUniqueViolation, type Store } from '../../../../api/store/index';
import type { SessionRow } from '../../../../api/store/sessions';
import type { CloseReason } from '../../../../shared/protocol/control-channel';
import { storeForEachTest } from '../../../helpers/store';

type NewSession = Parameters<Store['sessions']['insert']>[0];

/** 2026-01-01 at `hh:mm`. */
const t = (hhmm: string) => `2026-01-01T${hhmm}:00.000Z`;

const session = (session_id: string, over: Partial<NewSession> = {}): NewSession => ({
  session_id,
  device_id: 'dev-1',
  protocol: 'shell',
  ttl_seconds: 3600,
  opened_by: 'ann',
  token_id: 'tok_a',
  token_expires_at: null,
  opened_at: t('00:00'),
  expires_at: t('01:00'),
  trace_id: `trace-${session_id}`,
  targets: null,
  ...over,
});

describe('session repository', () => {
  const store = storeForEachTest();

  it('inserts an open session with no bytes and reads it back', async () => {
    await store.sessions.insert(session('s1', { token_expires_at: t('00:30') }));
    expect(await store.sessions.get('s1')).toEqual<SessionRow>({
      ...session('s1', { token_expires_at: t('00:30') }),
      status: 'open',
      closed_at: null,
      close_reason: null,
      bytes_to_device: 0,
      bytes_from_device: 0,
      access_request_id: null,
    });
    expect(await store.sessions.get('s2')).toBeUndefined();
  });

  it("keeps a port-forward session's targets, and only a port-forward session has them", async () => {
    await store.sessions.insert(session('pf', { protocol: 'port-forward', targets: ['127.0.0.1:5432', '[::1]:22'] }));
    expect(await store.sessions.get('pf')).toMatchObject({ protocol: 'port-forward', targets: ['127.0.0.1:5432', '[::1]:22'] });
    expect(await store.sessions.close('pf', 'closed', t('00:10'))).toMatchObject({ targets: ['127.0.0.1:5432', '[::1]:22'] });
    expect((await store.sessions.list({ protocol: 'port-forward', limit: 10, offset: 0 })).items.map((s) => s.targets)).toEqual([
      ['127.0.0.1:5432', '[::1]:22'],
    ]);
    await expect(store.sessions.insert(session('pf-none', { protocol: 'port-forward' }))).rejects.toThrow(/check constraint/i);
    await expect(store.sessions.insert(session('shell-t', { targets: ['127.0.0.1:22'] }))).rejects.toThrow(/check constraint/i);
  });

  describe('one open session per protocol per device', () => {
    it('refuses a second open session of the same protocol on the same device', async () => {
      await store.sessions.insert(session('s1'));
      let err: unknown;
      try {
        await store.sessions.insert(session('s2'));
      } catch (e) {
        err = e;
      }
      expect(isUniqueViolation(err)).toBe(true);
      expect(await store.sessions.get('s2')).toBeUndefined();
    });

    it('allows another protocol on the device, the protocol on another device, and a new one once the first closed', async () => {
      await store.sessions.insert(session('s1'));
      await store.sessions.insert(session('s2', { protocol: 'diagnostics' }));
      await store.sessions.insert(session('s3', { device_id: 'dev-2' }));
      await store.sessions.close('s1', 'closed', t('00:10'));
      await store.sessions.insert(session('s4'));
      await store.sessions.close('s4', 'closed', t('00:20'));
      await store.sessions.insert(session('s5')); // closed ones never count, however many
      expect((await store.sessions.openIds()).sort()).toEqual(['s2', 's3', 's5']);
    });
  });

  it('closes an open session once, returning it; a closed or unknown one gives nothing', async () => {
    await store.sessions.insert(session('s1'));
    const closed = await store.sessions.close('s1', 'expired', t('01:00'));
    expect(closed).toMatchObject({ session_id: 's1', status: 'closed', close_reason: 'expired', closed_at: t('01:00') });
    expect(await store.sessions.close('s1', 'closed', t('01:05'))).toBeUndefined();
    expect(await store.sessions.get('s1')).toMatchObject({ close_reason: 'expired', closed_at: t('01:00') }); // the first close stands
    expect(await store.sessions.close('nope', 'closed', t('01:05'))).toBeUndefined();
  });

  it('accepts every close reason of the catalogue, token_expired included, and nothing else', async () => {
    const reasons: CloseReason[] = ['closed', 'expired', 'token_expired', 'device_deleted', 'server_shutdown'];
    for (const [i, reason] of reasons.entries()) {
      await store.sessions.insert(session(`s${i}`, { device_id: `dev-${i}` }));
      expect((await store.sessions.close(`s${i}`, reason, t('00:30')))?.close_reason).toBe(reason);
    }
    await store.sessions.insert(session('bad'));
    await expect(store.sessions.close('bad', 'vanished' as CloseReason, t('00:30'))).rejects.toThrow(/check constraint/i);
    expect((await store.sessions.get('bad'))?.status).toBe('open');
  });

  it('refuses a TTL outside 60 s .. 8 h', async () => {
    await expect(store.sessions.insert(session('short', { ttl_seconds: 59 }))).rejects.toThrow(/check constraint/i);
    await expect(store.sessions.insert(session('long', { ttl_seconds: 28_801 }))).rejects.toThrow(/check constraint/i);
  });

  describe('list', () => {
    beforeEach(async () => {
      const rows: NewSession[] = [
        session('s1', { device_id: 'dev-1', protocol: 'shell', opened_by: 'ann', opened_at: t('00:01') }),
        session('s2', { device_id: 'dev-1', protocol: 'diagnostics', opened_by: 'bob', opened_at: t('00:02') }),
        session('s3', { device_id: 'dev-2', protocol: 'shell', opened_by: 'ann', opened_at: t('00:03') }),
        session('s4', { device_id: 'dev-3', protocol: 'shell', opened_by: 'bob', opened_at: t('00:03') }),
        session('s5', { device_id: 'dev-2', protocol: 'file-transfer', opened_by: 'ann', opened_at: t('00:05') }),
      ];
      for (const r of rows) await store.sessions.insert(r);
      await store.sessions.close('s1', 'closed', t('00:06'));
      await store.sessions.close('s4', 'closed', t('00:06'));
    });
    const ids = async (q: Partial<Parameters<Store['sessions']['list']>[0]>) => {
      const { items, total } = await store.sessions.list({ limit: 100, offset: 0, ...q });
      return { ids: items.map((s) => s.session_id), total };
    };

    it('lists newest first, the later id first when opened at the same moment', async () => {
      expect(await ids({})).toEqual({ ids: ['s5', 's4', 's3', 's2', 's1'], total: 5 });
    });

    it('filters by device, protocol, status, owner and opened strictly after `since`, combined', async () => {
      expect((await ids({ device_id: 'dev-2' })).ids).toEqual(['s5', 's3']);
      expect((await ids({ protocol: 'shell' })).ids).toEqual(['s4', 's3', 's1']);
      expect((await ids({ status: 'closed' })).ids).toEqual(['s4', 's1']);
      expect((await ids({ status: 'open' })).ids).toEqual(['s5', 's3', 's2']);
      expect((await ids({ opened_by: 'bob' })).ids).toEqual(['s4', 's2']);
      expect((await ids({ since: t('00:03') })).ids).toEqual(['s5']);
      expect((await ids({ since: t('00:02') })).ids).toEqual(['s5', 's4', 's3']);
      expect(await ids({ opened_by: 'ann', protocol: 'shell', status: 'open' })).toEqual({ ids: ['s3'], total: 1 });
      expect(await ids({ device_id: 'dev-9' })).toEqual({ ids: [], total: 0 });
    });

    it('pages with the total of the whole filter', async () => {
      expect(await ids({ limit: 2, offset: 0 })).toEqual({ ids: ['s5', 's4'], total: 5 });
      expect(await ids({ limit: 2, offset: 2 })).toEqual({ ids: ['s3', 's2'], total: 5 });
      expect(await ids({ limit: 2, offset: 4 })).toEqual({ ids: ['s1'], total: 5 });
      expect(await ids({ opened_by: 'ann', limit: 1, offset: 1 })).toEqual({ ids: ['s3'], total: 3 });
    });
  });

  describe('what is due', () => {
    beforeEach(async () => {
      const rows: NewSession[] = [
        session('token-now', { device_id: 'd1', expires_at: t('01:00'), token_expires_at: t('00:30') }),
        session('both-passed', { device_id: 'd2', expires_at: t('00:25'), token_expires_at: t('00:20') }),
        session('own-now', { device_id: 'd3', expires_at: t('00:30'), token_expires_at: t('00:20') }),
        session('no-token-expiry', { device_id: 'd4', expires_at: t('02:00'), token_expires_at: null }),
        session('token-later', { device_id: 'd5', expires_at: t('02:00'), token_expires_at: t('00:31') }),
        session('closed', { device_id: 'd6', expires_at: t('00:10'), token_expires_at: t('00:05') }),
      ];
      for (const r of rows) await store.sessions.insert(r);
      await store.sessions.close('closed', 'closed', t('00:01'));
    });

    it('dueIds: open sessions whose own expiry is at or before the moment', async () => {
      expect((await store.sessions.dueIds(t('00:30'))).sort()).toEqual(['both-passed', 'own-now']);
      expect(await store.sessions.dueIds(t('00:24'))).toEqual([]);
    });

    it('dueByTokenIds: open sessions whose token expired at or before the moment while they had not', async () => {
      expect(await store.sessions.dueByTokenIds(t('00:30'))).toEqual(['token-now']);
      // at 00:22 the token of both-passed and own-now has expired and they have not: theirs is token_expired
      expect((await store.sessions.dueByTokenIds(t('00:22'))).sort()).toEqual(['both-passed', 'own-now']);
      expect(await store.sessions.dueByTokenIds(t('00:19'))).toEqual([]);
    });

    it('nextExpiry: the earliest own or token expiry among open sessions, null when none is open', async () => {
      expect(await store.sessions.nextExpiry()).toBe(t('00:20'));
      await store.sessions.close('both-passed', 'expired', t('00:25'));
      await store.sessions.close('own-now', 'expired', t('00:30'));
      expect(await store.sessions.nextExpiry()).toBe(t('00:30')); // token-now's token, before its own 01:00
      await store.sessions.close('token-now', 'token_expired', t('00:30'));
      expect(await store.sessions.nextExpiry()).toBe(t('00:31'));
      await store.sessions.close('token-later', 'token_expired', t('00:31'));
      expect(await store.sessions.nextExpiry()).toBe(t('02:00')); // a session with no token expiry: its own
      await store.sessions.close('no-token-expiry', 'expired', t('02:00'));
      expect(await store.sessions.nextExpiry()).toBeNull();
    });
  });

  it('finds open sessions overall, by device and by token, and counts them', async () => {
    await store.sessions.insert(session('a', { device_id: 'd1', token_id: 'tok_1' }));
    await store.sessions.insert(session('b', { device_id: 'd1', protocol: 'diagnostics', token_id: 'tok_2' }));
    await store.sessions.insert(session('c', { device_id: 'd2', token_id: 'tok_1' }));
    await store.sessions.insert(session('d', { device_id: 'd3', token_id: null }));
    await store.sessions.close('c', 'closed', t('00:05'));
    expect((await store.sessions.openIds()).sort()).toEqual(['a', 'b', 'd']);
    expect((await store.sessions.openIdsOfDevice('d1')).sort()).toEqual(['a', 'b']);
    expect(await store.sessions.openIdsOfDevice('d2')).toEqual([]);
    expect(await store.sessions.openIdsOfToken('tok_1')).toEqual(['a']);
    expect(await store.sessions.openIdsOfToken('tok_9')).toEqual([]);
    expect(await store.sessions.openCount()).toBe(3);
  });

  describe('addBytes', () => {
    it('adds each flush to the counters, also of a session closed in the meantime', async () => {
      await store.sessions.insert(session('s1', { device_id: 'd1' }));
      await store.sessions.insert(session('s2', { device_id: 'd2' }));
      await store.sessions.addBytes(
        new Map([
          ['s1', { toDevice: 100, fromDevice: 5 }],
          ['s2', { toDevice: 1, fromDevice: 2 }],
        ]),
      );
      await store.sessions.close('s1', 'closed', t('00:10'));
      await store.sessions.addBytes(
        new Map([
          ['s1', { toDevice: 20, fromDevice: 3_000_000_000 }],
          ['ghost', { toDevice: 1, fromDevice: 1 }],
        ]),
      );
      expect(await store.sessions.get('s1')).toMatchObject({ bytes_to_device: 120, bytes_from_device: 3_000_000_005 });
      expect(await store.sessions.get('s2')).toMatchObject({ bytes_to_device: 1, bytes_from_device: 2 });
    });

    it('applies a flush whole or not at all', async () => {
      await store.sessions.insert(session('s1', { device_id: 'd1' }));
      await store.sessions.insert(session('s2', { device_id: 'd2' }));
      // A fractional count cannot be stored in the integer column (STRICT on SQLite, BIGINT on
      // PostgreSQL): the flush fails midway.
      await expect(
        store.sessions.addBytes(
          new Map([
            ['s1', { toDevice: 10, fromDevice: 10 }],
            ['s2', { toDevice: 0.5, fromDevice: 0 }],
          ]),
        ),
      ).rejects.toThrow(/REAL value in INTEGER column|invalid input syntax for type bigint/);
      expect(await store.sessions.get('s1')).toMatchObject({ bytes_to_device: 0, bytes_from_device: 0 });
    });
  });
});
