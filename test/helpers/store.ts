/** Repository tests: a fresh SQLite store per test, on a real file in a temp dir. */
import { afterEach, beforeEach } from 'vitest';
import { openStore, type Store } from '../../api/store/index';
import { tempDir } from './stack';

/**
 * A store opened before each test of the file and closed after it. The value returned stands for
 * whichever store the running test has (its properties are read from it), so a test file writes
 * `const store = storeForEachTest()` once at the top of a describe.
 */
export function storeForEachTest(): Store {
  let current: Store | undefined;
  beforeEach(() => {
    current = openStore(tempDir());
  });
  afterEach(() => current?.close());
  return new Proxy({} as Store, {
    get(_target, key) {
      if (!current) throw new Error('the store is open only while a test runs');
      return Reflect.get(current, key);
    },
  });
}

/** The error `fn` throws; fails the test when it throws none. */
export function failure(fn: () => void): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error('expected a failure');
}
