/** The store (SQLite, or PostgreSQL in the `postgres` run): named secrets created once and kept across restarts, and the test for unique-constraint violations. */
import { afterEach, describe, expect, it } from 'vitest';
import { isUniqueViolation, openStore, type Store } from '../../../../api/store/index';
import { failure, freshStoreLocation, openTestStore } from '../../../helpers/store';

describe('store', () => {
  let store: Store | undefined;
  afterEach(async () => {
    await store?.close();
    store = undefined;
  });

  it('creates a 32-byte random secret on first use and returns the same one from then on, also after a reopen', async () => {
    const location = await freshStoreLocation();
    store = await openStore(location);
    const ticketKey = await store.secret('ticket-key');
    expect(ticketKey).toHaveLength(32);
    expect((await store.secret('ticket-key')).equals(ticketKey)).toBe(true);
    expect((await store.secret('other')).equals(ticketKey)).toBe(false);
    await store.close();
    store = await openStore(location);
    expect((await store.secret('ticket-key')).equals(ticketKey)).toBe(true);
  });

  it('tells a UNIQUE or PRIMARY KEY violation from any other error', async () => {
    store = await openTestStore();
    const opened = store;
    const user = { username: 'ann', role: null, kind: 'human' as const, created_at: '2026-01-01T00:00:00Z' };
    await store.users.insert(user, null);
    const duplicate = await failure(() => opened.users.insert(user, null));
    expect(isUniqueViolation(duplicate)).toBe(true);
    expect(isUniqueViolation(new Error('UNIQUE constraint failed'))).toBe(false); // the code counts, not the text
    expect(isUniqueViolation(null)).toBe(false);
    expect(isUniqueViolation(undefined)).toBe(false);
  });
});
