/**
 * @module Agents' results written in groups (docs/jobs.md, scale): every result that arrives while
 * a write is in progress joins the next one, which records them all in one transaction, so ten
 * thousand agents answering at once cost a few hundred commits (fsyncs) instead of ten thousand.
 * Each result is still recorded once, by its guarded UPDATE (`JobRunRepo.end`), and its caller
 * learns its own outcome; a failed group fails only its own callers. What waits is bounded by the
 * dispatcher's per-device bound on messages being handled.
 */
import { atomically, type Executor } from '../store/schema';
import { createJobRunRepo, type AttemptEnd } from '../store/job-runs';
import type { Dialect } from '../store/db';

/** The most results one transaction records. */
const MAX_GROUP = 500;

interface Pending {
  executionId: string;
  attempt: number;
  deviceId: string;
  end: AttemptEnd;
  resolve(jobId: string | undefined): void;
  reject(err: Error): void;
}

export function createResultWriter(db: Executor, dialect: Dialect) {
  let queue: Pending[] = [];
  let writing: Promise<void> | undefined;

  async function writeGroups(): Promise<void> {
    while (queue.length > 0) {
      const group = queue.slice(0, MAX_GROUP);
      queue = queue.slice(MAX_GROUP);
      try {
        const jobIds = await atomically(db, async (tx) => {
          const runs = createJobRunRepo(tx, dialect);
          const out: (string | undefined)[] = [];
          for (const r of group) out.push(await runs.end(r.executionId, r.attempt, r.deviceId, r.end));
          return out;
        });
        group.forEach((r, i) => r.resolve(jobIds[i]));
      } catch (err) {
        for (const r of group) r.reject(err as Error);
      }
    }
  }

  /** Starts writing unless a write runs; one that ends with results waiting starts the next. */
  function kick(): void {
    if (writing) return;
    writing = writeGroups().finally(() => {
      writing = undefined;
      if (queue.length > 0) kick();
    });
  }

  return {
    /** Records an attempt's end with the others arriving now; resolves to its job's id, or undefined when the attempt was not running. */
    record(executionId: string, attempt: number, deviceId: string, end: AttemptEnd): Promise<string | undefined> {
      return new Promise((resolve, reject) => {
        queue.push({ executionId, attempt, deviceId, end, resolve, reject });
        kick();
      });
    },
  };
}
