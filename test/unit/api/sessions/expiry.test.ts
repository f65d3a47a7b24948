/** The session expiry timer and sweep: each session ends at its own TTL or its token's expiry, whichever comes first, and is audited. */
import { rmSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { detachedRelay } from '../../../../api/relay';
import { createSessions } from '../../../../api/sessions/sessions';
import { openStore, type Store } from '../../../../api/store/index';
import type { Principal } from '../../../../api/store/tokens';
import { silentLogger } from '../../../../shared/log';
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

describe('session expiry timer', () => {
  let dir: string;
  let store: Store;

  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
    vi.setSystemTime(new Date('2026-01-01T00:00:00Z'));
    dir = tempDir();
    store = openStore(dir);
    for (const id of ['dev-a', 'dev-b']) {
      store.devices.insert(id, `hash-${id}`, {}, new Date().toISOString());
      store.devices.markOnline(id, '1', new Date().toISOString());
    }
  });
  afterEach(() => {
    vi.useRealTimers();
    store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('expires each session at its own time with one timer, and audits it', () => {
    const service = createSessions({ store, relay: detachedRelay, log: silentLogger, now: Date.now });
    service.start();
    const long = service.open(admin, { device_id: 'dev-a', protocol: 'shell', ttl_seconds: 120 });
    const short = service.open(admin, { device_id: 'dev-b', protocol: 'shell', ttl_seconds: 60 });

    vi.advanceTimersByTime(59_999);
    expect(store.sessions.get(short.session_id)?.status).toBe('open');
    vi.advanceTimersByTime(1);
    expect(store.sessions.get(short.session_id)).toMatchObject({ status: 'closed', close_reason: 'expired' });
    expect(store.sessions.get(long.session_id)?.status).toBe('open');

    vi.advanceTimersByTime(60_000);
    expect(store.sessions.get(long.session_id)).toMatchObject({
      status: 'closed',
      close_reason: 'expired',
      closed_at: '2026-01-01T00:02:00.000Z',
    });
    const events = store.audit.list({ event: 'session.expired', limit: 10, offset: 0 });
    expect(events.items.map((e) => [e.session_id, e.actor, e.reason])).toEqual([
      [long.session_id, 'system', 'expired'],
      [short.session_id, 'system', 'expired'],
    ]);
    expect(vi.getTimerCount()).toBe(1); // nothing left open: only the safety sweep remains
    service.shutdown();
    expect(vi.getTimerCount()).toBe(0);
  });

  it('the safety sweep catches a wall-clock step the timer cannot see', () => {
    let offset = 0;
    const service = createSessions({ store, relay: detachedRelay, log: silentLogger, now: () => Date.now() + offset });
    service.start();
    const s = service.open(admin, { device_id: 'dev-a', protocol: 'shell', ttl_seconds: 3600 });
    offset = 3600_000; // the wall clock jumps an hour; the armed timer still waits an hour
    vi.advanceTimersByTime(5000);
    expect(store.sessions.get(s.session_id)).toMatchObject({ status: 'closed', close_reason: 'expired' });
    service.shutdown();
  });

  it('a closed session is not expired later', () => {
    const service = createSessions({ store, relay: detachedRelay, log: silentLogger, now: Date.now });
    service.start();
    const s = service.open(admin, { device_id: 'dev-a', protocol: 'diagnostics', ttl_seconds: 60 });
    service.close(admin, s.session_id);
    vi.advanceTimersByTime(120_000);
    expect(store.sessions.get(s.session_id)?.close_reason).toBe('closed');
    expect(store.audit.list({ event: 'session.expired', limit: 10, offset: 0 }).total).toBe(0);
    service.shutdown();
  });

  it('a session closes when the token that opened it expires, before its own TTL', () => {
    const service = createSessions({ store, relay: detachedRelay, log: silentLogger, now: Date.now });
    service.start();
    const shortLived: Principal = { ...admin, token_id: 'tok_short', expires_at: '2026-01-01T00:00:15.000Z' };
    const bound = service.open(shortLived, { device_id: 'dev-a', protocol: 'shell', ttl_seconds: 8 * 3600 });
    const free = service.open(admin, { device_id: 'dev-b', protocol: 'shell', ttl_seconds: 8 * 3600 });
    service.streamAttached(free.session_id); // in use: it does not close idle meanwhile

    vi.advanceTimersByTime(14_999);
    expect(store.sessions.get(bound.session_id)?.status).toBe('open');
    vi.advanceTimersByTime(1);
    expect(store.sessions.get(bound.session_id)).toMatchObject({
      status: 'closed',
      close_reason: 'token_expired',
      closed_at: '2026-01-01T00:00:15.000Z',
    });
    const events = store.audit.list({ session_id: bound.session_id, limit: 10, offset: 0 });
    expect(events.items.map((e) => [e.event, e.actor, e.reason])).toEqual([
      ['session.closed', 'system', 'token_expired'],
      ['session.opened', 'ops', null],
    ]);
    // a token without expiry bounds nothing
    vi.advanceTimersByTime(3600_000);
    expect(store.sessions.get(free.session_id)?.status).toBe('open');
    service.shutdown();
  });

  it('a session whose own TTL ends first is expired, not token_expired', () => {
    const service = createSessions({ store, relay: detachedRelay, log: silentLogger, now: Date.now });
    service.start();
    const token: Principal = { ...admin, token_id: 'tok_hour', expires_at: '2026-01-01T01:00:00.000Z' };
    const s = service.open(token, { device_id: 'dev-a', protocol: 'shell', ttl_seconds: 60 });
    vi.advanceTimersByTime(60_000);
    expect(store.sessions.get(s.session_id)?.close_reason).toBe('expired');
    service.shutdown();
  });
});
