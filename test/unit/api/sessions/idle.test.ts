/**
 * A session nobody uses closes `idle` (api/sessions/idle.ts): idle from its opening, in use while
 * a client is attached, idle again from the moment its last client leaves; sessions open when the
 * process starts get a fresh window; the TTL and the token's expiry still win when they come first.
 */
import { rmSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { detachedRelay } from '../../../../api/relay';
import { createSessions, type Sessions } from '../../../../api/sessions/sessions';
import type { Store } from '../../../../api/store/index';
import type { Principal } from '../../../../api/store/tokens';
import { silentLogger } from '../../../../shared/log';
import { tempDir } from '../../../helpers/stack';
import { openTestStore } from '../../../helpers/store';

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
  /** Every service a test made: moving the clock waits for each one's expiry run. */
  let services: Sessions[] = [];
  const service = async () => {
    const s = createSessions({ store, relay: detachedRelay, log: silentLogger, now: Date.now, idleSeconds: IDLE_S });
    services.push(s);
    await s.start();
    return s;
  };
  const statusOf = async (id: string) => (await store.sessions.get(id))?.status;
  /** Moves the fake clock on by `ms`, waiting for the expiry runs that woke (the database answers in real time). */
  const advance = async (ms: number) => {
    // A second at a time, each run finished before the clock moves on, as time passes for real.
    for (let left = ms; left > 0; left -= 1000) {
      vi.advanceTimersByTime(Math.min(left, 1000));
      for (const s of services) await s.settled();
    }
  };

  beforeEach(async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
    vi.setSystemTime(new Date('2026-01-01T00:00:00Z'));
    dir = tempDir();
    services = [];
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

  it('a session never joined closes idle at its opening + the idle time, audited with reason idle', async () => {
    const sessions = await service();
    const s = await sessions.open(admin, { device_id: 'dev-a', protocol: 'shell' });
    await advance(IDLE_S * 1000 - 1);
    expect(await statusOf(s.session_id)).toBe('open');
    await advance(1);
    expect(await store.sessions.get(s.session_id)).toMatchObject({ status: 'closed', close_reason: 'idle', closed_at: '2026-01-01T00:05:00.000Z' });
    const events = (await store.audit.list({ session_id: s.session_id, limit: 10, offset: 0 })).items;
    expect(events.map((e) => [e.event, e.actor, e.reason])).toEqual([
      ['session.closed', 'system', 'idle'],
      ['session.opened', 'ops', null],
    ]);
    // the protocol is free again
    expect((await sessions.open(admin, { device_id: 'dev-a', protocol: 'shell' })).status).toBe('open');
    await sessions.shutdown();
  });

  it('stays open while a client is attached, and closes the idle time after the last one left', async () => {
    const sessions = await service();
    const s = await sessions.open(admin, { device_id: 'dev-a', protocol: 'shell' });
    await advance(10_000);
    sessions.streamAttached(s.session_id);
    await advance(3 * IDLE_S * 1000);
    expect(await statusOf(s.session_id)).toBe('open');
    // reports may cross: a second join before the first leave keeps it in use until both left
    sessions.streamAttached(s.session_id);
    sessions.streamDetached(s.session_id);
    await advance(2 * IDLE_S * 1000);
    expect(await statusOf(s.session_id)).toBe('open');
    sessions.streamDetached(s.session_id);
    await advance(IDLE_S * 1000 - 1);
    expect(await statusOf(s.session_id)).toBe('open');
    await advance(1);
    expect(await store.sessions.get(s.session_id)).toMatchObject({ status: 'closed', close_reason: 'idle' });
    await sessions.shutdown();
  });

  it('sessions open when the process starts get a fresh idle window from then', async () => {
    const first = await service();
    const s = await first.open(admin, { device_id: 'dev-a', protocol: 'shell' });
    first.streamAttached(s.session_id);
    await advance(IDLE_S * 1000 * 2);
    // a control node restarts (its edges still hold the session's client): attachment is forgotten
    const again = await service();
    await advance(IDLE_S * 1000 - 1);
    expect(await statusOf(s.session_id)).toBe('open');
    // a leave reported for a join made before the restart restarts the clock too
    again.streamDetached(s.session_id);
    await advance(IDLE_S * 1000 - 1);
    expect(await statusOf(s.session_id)).toBe('open');
    await advance(1);
    expect((await store.sessions.get(s.session_id))?.close_reason).toBe('idle');
    await again.shutdown();
    await first.shutdown();
  });

  it('a report about a closed or unknown session changes nothing', async () => {
    const sessions = await service();
    const s = await sessions.open(admin, { device_id: 'dev-a', protocol: 'shell' });
    await sessions.close(admin, s.session_id);
    sessions.streamAttached(s.session_id);
    sessions.streamDetached(s.session_id);
    sessions.streamAttached('sess-unknown');
    sessions.streamDetached('sess-unknown');
    await advance(IDLE_S * 1000);
    expect((await store.sessions.get(s.session_id))?.close_reason).toBe('closed');
    expect((await store.audit.list({ session_id: s.session_id, event: 'session.closed', limit: 10, offset: 0 })).total).toBe(1);
    await sessions.shutdown();
  });

  it('the TTL and the token still win when they come first', async () => {
    const sessions = await service();
    const ttl = await sessions.open(admin, { device_id: 'dev-a', protocol: 'shell', ttl_seconds: 60 });
    const token: Principal = { ...admin, token_id: 'tok_short', expires_at: '2026-01-01T00:02:00.000Z' };
    const bound = await sessions.open(token, { device_id: 'dev-b', protocol: 'shell' });
    await advance(IDLE_S * 1000);
    expect((await store.sessions.get(ttl.session_id))?.close_reason).toBe('expired');
    expect((await store.sessions.get(bound.session_id))?.close_reason).toBe('token_expired');
    await sessions.shutdown();
  });
});
