/**
 * A session nobody uses closes `idle` (api/sessions/idle.ts): idle from its opening, in use while
 * a client is attached, idle again from the moment its last client leaves; sessions open when the
 * process starts get a fresh window; the TTL and the token's expiry still win when they come first.
 */
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
const IDLE_S = 300;

describe('idle sessions', () => {
  let dir: string;
  let store: Store;
  const service = () => {
    const s = createSessions({ store, relay: detachedRelay, log: silentLogger, now: Date.now, idleSeconds: IDLE_S });
    s.start();
    return s;
  };
  const statusOf = (id: string) => store.sessions.get(id)?.status;

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

  it('a session never joined closes idle at its opening + the idle time, audited with reason idle', () => {
    const sessions = service();
    const s = sessions.open(admin, { device_id: 'dev-a', protocol: 'shell' });
    vi.advanceTimersByTime(IDLE_S * 1000 - 1);
    expect(statusOf(s.session_id)).toBe('open');
    vi.advanceTimersByTime(1);
    expect(store.sessions.get(s.session_id)).toMatchObject({ status: 'closed', close_reason: 'idle', closed_at: '2026-01-01T00:05:00.000Z' });
    const events = store.audit.list({ session_id: s.session_id, limit: 10, offset: 0 }).items;
    expect(events.map((e) => [e.event, e.actor, e.reason])).toEqual([
      ['session.closed', 'system', 'idle'],
      ['session.opened', 'ops', null],
    ]);
    // the protocol is free again
    expect(sessions.open(admin, { device_id: 'dev-a', protocol: 'shell' }).status).toBe('open');
    sessions.shutdown();
  });

  it('stays open while a client is attached, and closes the idle time after the last one left', () => {
    const sessions = service();
    const s = sessions.open(admin, { device_id: 'dev-a', protocol: 'shell' });
    vi.advanceTimersByTime(10_000);
    sessions.streamAttached(s.session_id);
    vi.advanceTimersByTime(3 * IDLE_S * 1000);
    expect(statusOf(s.session_id)).toBe('open');
    // reports may cross: a second join before the first leave keeps it in use until both left
    sessions.streamAttached(s.session_id);
    sessions.streamDetached(s.session_id);
    vi.advanceTimersByTime(2 * IDLE_S * 1000);
    expect(statusOf(s.session_id)).toBe('open');
    sessions.streamDetached(s.session_id);
    vi.advanceTimersByTime(IDLE_S * 1000 - 1);
    expect(statusOf(s.session_id)).toBe('open');
    vi.advanceTimersByTime(1);
    expect(store.sessions.get(s.session_id)).toMatchObject({ status: 'closed', close_reason: 'idle' });
    sessions.shutdown();
  });

  it('sessions open when the process starts get a fresh idle window from then', () => {
    const first = service();
    const s = first.open(admin, { device_id: 'dev-a', protocol: 'shell' });
    first.streamAttached(s.session_id);
    vi.advanceTimersByTime(IDLE_S * 1000 * 2);
    // a control node restarts (its edges still hold the session's client): attachment is forgotten
    const again = createSessions({ store, relay: detachedRelay, log: silentLogger, now: Date.now, idleSeconds: IDLE_S });
    again.start();
    vi.advanceTimersByTime(IDLE_S * 1000 - 1);
    expect(statusOf(s.session_id)).toBe('open');
    // a leave reported for a join made before the restart restarts the clock too
    again.streamDetached(s.session_id);
    vi.advanceTimersByTime(IDLE_S * 1000 - 1);
    expect(statusOf(s.session_id)).toBe('open');
    vi.advanceTimersByTime(1);
    expect(store.sessions.get(s.session_id)?.close_reason).toBe('idle');
    again.shutdown();
    first.shutdown();
  });

  it('a report about a closed or unknown session changes nothing', () => {
    const sessions = service();
    const s = sessions.open(admin, { device_id: 'dev-a', protocol: 'shell' });
    sessions.close(admin, s.session_id);
    sessions.streamAttached(s.session_id);
    sessions.streamDetached(s.session_id);
    sessions.streamAttached('sess-unknown');
    sessions.streamDetached('sess-unknown');
    vi.advanceTimersByTime(IDLE_S * 1000);
    expect(store.sessions.get(s.session_id)?.close_reason).toBe('closed');
    expect(store.audit.list({ session_id: s.session_id, event: 'session.closed', limit: 10, offset: 0 }).total).toBe(1);
    sessions.shutdown();
  });

  it('the TTL and the token still win when they come first', () => {
    const sessions = service();
    const ttl = sessions.open(admin, { device_id: 'dev-a', protocol: 'shell', ttl_seconds: 60 });
    const token: Principal = { ...admin, token_id: 'tok_short', expires_at: '2026-01-01T00:02:00.000Z' };
    const bound = sessions.open(token, { device_id: 'dev-b', protocol: 'shell' });
    vi.advanceTimersByTime(IDLE_S * 1000);
    expect(store.sessions.get(ttl.session_id)?.close_reason).toBe('expired');
    expect(store.sessions.get(bound.session_id)?.close_reason).toBe('token_expired');
    sessions.shutdown();
  });
});
