/** The store: named secrets created once and kept across restarts, and the test for unique-constraint violations. */
import { afterEach, describe, expect, it } from 'vitest';
import { isUniqueViolation, openStore, type Store } from '../../../../api/store/index';
import { tempDir } from '../../../helpers/stack';

describe('store', () => {
  let store: Store | undefined;
  afterEach(() => store?.close());

  it('creates a 32-byte random secret on first use and returns the same one from then on, also after a reopen', () => {
    const dir = tempDir();
    store = openStore(dir);
    const ticketKey = store.secret('ticket-key');
    expect(ticketKey).toHaveLength(32);
    expect(store.secret('ticket-key').equals(ticketKey)).toBe(true);
    expect(store.secret('other').equals(ticketKey)).toBe(false);
    store.close();
    store = openStore(dir);
    expect(store.secret('ticket-key').equals(ticketKey)).toBe(true);
  });

  it('tells a UNIQUE or PRIMARY KEY violation from any other error', () => {
    store = openStore(tempDir());
    const user = { username: 'ann', role: null, kind: 'human' as const, created_at: '2026-01-01T00:00:00Z' };
    store.users.insert(user, null);
    const duplicate = (() => {
      try {
        store.users.insert(user, null);
      } catch (err) {
        return err;
      }
      return undefined;
    })();
    expect(isUniqueViolation(duplicate)).toBe(true);
    expect(isUniqueViolation(new Error('UNIQUE constraint failed'))).toBe(false); // the code counts, not the text
    expect(isUniqueViolation(null)).toBe(false);
    expect(isUniqueViolation(undefined)).toBe(false);
  });
});
