/**
 * @module A queue between something that receives items when they come (a socket) and something
 * that waits for them one at a time (a request's answers). Items are kept until taken; a failure
 * rejects every wait, present and future.
 */

export interface Mailbox<T> {
  put(item: T): void;
  /** Ends the mailbox: waits, present and future, reject with `err` once the kept items are taken. */
  fail(err: Error): void;
  /** The oldest item not yet taken, when there is one. */
  take(): Promise<T>;
}

export function createMailbox<T>(): Mailbox<T> {
  const items: T[] = [];
  const waiting: Array<{ resolve: (item: T) => void; reject: (err: Error) => void }> = [];
  let failure: Error | undefined;

  return {
    put(item) {
      if (failure) return;
      const waiter = waiting.shift();
      if (waiter) waiter.resolve(item);
      else items.push(item);
    },
    fail(err) {
      if (failure) return;
      failure = err;
      for (const waiter of waiting.splice(0)) waiter.reject(err);
    },
    take() {
      if (items.length > 0) return Promise.resolve(items.shift()!);
      if (failure) return Promise.reject(failure);
      return new Promise<T>((resolve, reject) => void waiting.push({ resolve, reject }));
    },
  };
}
