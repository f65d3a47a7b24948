/** The session expiry timer and sweep: each session ends at its own TTL or its token's expiry, whichever comes first, and is audited. */
import { rmSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { detachedRelay } from '../../../../api/relay';
import { createSessions, type Sessions } from '../../../../api/sessions/sessions';
import type { Store } from '../../../../api/store/index';
import type { Principal } from '../../../../api/store/tokens';
import { silentLogger } from '../../../../shared/log';
import { openTestStore } from '../../../helpers/store';
import { tempDir } from '../../../helpers/stack';

const admin: Principal = {
  token_id: 'tok_x',
  username: 'ops',
  role: 'administrator',
  kind: 'human',
  scopes: ['*'],
  tenants: [],
  created_at: '',
  expires_at: null,
  revoked_at: null,
};

/** Moves the fake clock on by `ms`, waiting for the expiry runs that woke (the database answers in real time). */
async function advance(service: Sessions, ms: number): Promise<void> {
  // A second at a time, each run finished before the clock moves on, as time passes for real.
  for (let left = ms; left > 0; left -= 1000) {
    vi.advanceTimersByTime(Math.min(left, 1000));
    await service.settled();
  }
}

describe('session expiry timer', () => {
  let dir: string;
  let store: Store;

  beforeEach(async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
    vi.setSystemTime(new Date('2026-01-01T00:00:00Z'));
    dir = tempDir();
    store = await openTestStore(dir);
    for (const id of ['dev-a', 'dev-b']) {
      await store.devices.insert(id, `hash-${id}`, {}, new Date().toISOString());
      await store.devices.markOnline(id, '1', new Date().toISOString());
    }
  });
  afterEach(async () => {
    vi.useRealTimers();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('expires each session at its own time with one timer, and audits it', async () => {
    const service = createSessions({ store, relay: detachedRelay, log: silentLogger, now: Date.now });
    await service.start();
    const long = await service.open(admin, { device_id: 'dev-a', protocol: 'shell', ttl_seconds: 120 });
    const short = await service.open(admin, { device_id: 'dev-b', protocol: 'shell', ttl_seconds: 60 });

    await advance(service, 59_999);
    expect((await store.sessions.get(short.session_id))?.status).toBe('open');
    await advance(service, 1);
    expect(await store.sessions.get(short.session_id)).toMatchObject({ status: 'closed', close_reason: 'expired' });
    expect((await store.sessions.get(long.session_id))?.status).toBe('open');

    await advance(service, 60_000);
    expect(await store.sessions.get(long.session_id)).toMatchObject({
      status: 'closed',
      close_reason: 'expired',
      closed_at: '2026-01-01T00:02:00.000Z',
    });
    const events = await store.audit.list({ event: 'session.expired', limit: 10, offset: 0 });
    expect(events.items.map((e) => [e.session_id, e.actor, e.reason])).toEqual([
      [long.session_id, 'system', 'expired'],
      [short.session_id, 'system', 'expired'],
    ]);
    expect(service.timers()).toEqual({ timer: false, sweep: true }); // nothing left open: only the safety sweep remains
    await service.shutdown();
    expect(service.timers()).toEqual({ timer: false, sweep: false });
  });

  it('the safety sweep catches a wall-clock step the timer cannot see', async () => {
    let offset = 0;
    const service = createSessions({ store, relay: detachedRelay, log: silentLogger, now: () => Date.now() + offset });
    await service.start();
    const s = await service.open(admin, { device_id: 'dev-a', protocol: 'shell', ttl_seconds: 3600 });
    offset = 3600_000; // the wall clock jumps an hour; the armed timer still waits an hour
    await advance(service, 5000);
    expect(await store.sessions.get(s.session_id)).toMatchObject({ status: 'closed', close_reason: 'expired' });
    await service.shutdown();
  });

  it('a closed session is not expired later', async () => {
    const service = createSessions({ store, relay: detachedRelay, log: silentLogger, now: Date.now });
    await service.start();
    const s = await service.open(admin, { device_id: 'dev-a', protocol: 'diagnostics', ttl_seconds: 60 });
    await service.close(admin, s.session_id);
    await advance(service, 120_000);
    expect((await store.sessions.get(s.session_id))?.close_reason).toBe('closed');
    expect((await store.audit.list({ event: 'session.expired', limit: 10, offset: 0 })).total).toBe(0);
    await service.shutdown();
  });

  it('a session closes when the token that opened it expires, before its own TTL', async () => {
    const service = createSessions({ store, relay: detachedRelay, log: silentLogger, now: Date.now });
    await service.start();
    const shortLived: Principal = { ...admin, token_id: 'tok_short', expires_at: '2026-01-01T00:00:15.000Z' };
    const bound = await service.open(shortLived, { device_id: 'dev-a', protocol: 'shell', ttl_seconds: 8 * 3600 });
    const free = await service.open(admin, { device_id: 'dev-b', protocol: 'shell', ttl_seconds: 8 * 3600 });
    service.streamAttached(free.session_id); // in use: it does not close idle meanwhile

    await advance(service, 14_999);
    expect((await store.sessions.get(bound.session_id))?.status).toBe('open');
    await advance(service, 1);
    expect(await store.sessions.get(bound.session_id)).toMatchObject({
      status: 'closed',
      close_reason: 'token_expired',
      closed_at: '2026-01-01T00:00:15.000Z',
    });
    const events = await store.audit.list({ session_id: bound.session_id, limit: 10, offset: 0 });
    expect(events.items.map((e) => [e.event, e.actor, e.reason])).toEqual([
      ['session.closed', 'system', 'token_expired'],
      ['session.opened', 'ops', null],
    ]);
    // a token without expiry bounds nothing
    await advance(service, 3600_000);
    expect((await store.sessions.get(free.session_id))?.status).toBe('open');
    await service.shutdown();
  });

  it('a session whose own TTL ends first is expired, not token_expired', async () => {
    const service = createSessions({ store, relay: detachedRelay, log: silentLogger, now: Date.now });
    await service.start();
    const token: Principal = { ...admin, token_id: 'tok_hour', expires_at: '2026-01-01T01:00:00.000Z' };
    const s = await service.open(token, { device_id: 'dev-a', protocol: 'shell', ttl_seconds: 60 });
    await advance(service, 60_000);
    expect((await store.sessions.get(s.session_id))?.close_reason).toBe('expired');
    await service.shutdown();
  });
});
