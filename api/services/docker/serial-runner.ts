/**
 * @module Runs a job per key, never two of one key at once: a kick while the key's job runs makes
 * it run once more right after (so the latest instructions are always acted on), and a job that
 * says its work is not settled runs again after `followUpMs` unless something kicks it sooner.
 */
export interface SerialRunner {
  kick(key: string): void;
  /** No job starts from now on; those running finish by themselves. */
  close(): void;
}

/** `job` resolves true when its key is settled; a job that rejects is reported and treated as settled (a tick retries it). */
export function createSerialRunner(job: (key: string) => Promise<boolean>, followUpMs: number, onError: (key: string, err: unknown) => void): SerialRunner {
  const running = new Set<string>();
  const again = new Set<string>();
  const followUps = new Map<string, NodeJS.Timeout>();
  let closed = false;

  function finished(key: string, settled: boolean): void {
    running.delete(key);
    if (closed) return;
    if (again.delete(key)) kick(key);
    else if (!settled)
      followUps.set(
        key,
        setTimeout(() => kick(key), followUpMs),
      );
  }

  function kick(key: string): void {
    if (closed) return;
    clearTimeout(followUps.get(key));
    followUps.delete(key);
    if (running.has(key)) {
      again.add(key);
      return;
    }
    running.add(key);
    job(key)
      .catch((err: unknown) => {
        onError(key, err);
        return true;
      })
      .then((settled) => finished(key, settled))
      .catch((err: unknown) => onError(key, err));
  }

  return {
    kick,
    close() {
      closed = true;
      for (const timer of followUps.values()) clearTimeout(timer);
      followUps.clear();
    },
  };
}
