/**
 * @module A bound on the password hashes in flight. scrypt is slow on purpose, so anyone who can
 * ask for a password check (a login needs no token) can spend the server's CPU and memory with
 * it. A few hashes run at once, a few more wait their turn; beyond that a check is refused at
 * once with 429 and `Retry-After`, so a flood costs a fixed share of the machine and a caller
 * never waits behind an unbounded queue.
 */
import { ApiError } from '../errors';

/** Seconds a refused caller is told to wait: a slot frees within one hash (tens of ms). */
const RETRY_AFTER_S = 1;

export interface HashGate {
  /** Runs `work` once a slot is free; throws 429 when every slot and every place in line is taken. */
  run<T>(work: () => Promise<T>): Promise<T>;
}

export function createHashGate(slots: number, queue: number): HashGate {
  let running = 0;
  const waiting: Array<() => void> = [];

  /** Hands the slot to the next in line, or frees it. */
  function leave(): void {
    const next = waiting.shift();
    if (next) next();
    else running--;
  }

  return {
    async run(work) {
      if (running < slots) running++;
      else if (waiting.length < queue) await new Promise<void>((resolve) => waiting.push(resolve));
      else {
        throw new ApiError('rate_limited', `the server is checking as many passwords as it can; retry in ${RETRY_AFTER_S} s`, undefined, {
          'Retry-After': String(RETRY_AFTER_S),
        });
      }
      try {
        return await work();
      } finally {
        leave();
      }
    },
  };
}
