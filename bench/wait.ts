/**
 * @module Polling with a deadline: the benchmarks and the tests wait for events, never for a fixed
 * time. (The tests use it through test/helpers/wait.ts: bench/ never imports the tests.)
 */
export async function waitFor<T>(
  probe: () => T | undefined | false | null | Promise<T | undefined | false | null>,
  what: string,
  timeoutMs = 10_000,
  intervalMs = 20,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false && value !== null) return value;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${lastError ? `: ${String(lastError)}` : ''}`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
