/** The bound on password hashes in flight: `slots` run, `queue` wait in order, the rest are refused at once with 429. */
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../../../api/errors';
import { createHashGate } from '../../../../api/identity/hash-gate';

/** Work that runs until `finish` is called, noting when it started. */
function pending(started: number[], id: number) {
  let finish!: () => void;
  const done = new Promise<number>((resolve) => (finish = () => resolve(id)));
  return { work: () => (started.push(id), done), finish: () => finish() };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('hash gate', () => {
  it('runs `slots` at once, queues `queue` in order, refuses the rest with 429 and Retry-After', async () => {
    const gate = createHashGate(2, 2);
    const started: number[] = [];
    const jobs = [0, 1, 2, 3].map((id) => pending(started, id));
    const runs = jobs.map((j) => gate.run(j.work));
    await tick();
    expect(started).toEqual([0, 1]);
    const refused = await gate.run(async () => 'never').catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ApiError);
    expect(refused).toMatchObject({ code: 'rate_limited', status: 429, headers: { 'Retry-After': '1' } });
    jobs[1]!.finish();
    await tick();
    expect(started).toEqual([0, 1, 2]); // the freed slot goes to the first in line
    for (const j of jobs) j.finish();
    expect(await Promise.all(runs)).toEqual([0, 1, 2, 3]);
    // all slots free again
    expect(await Promise.all([gate.run(async () => 'a'), gate.run(async () => 'b')])).toEqual(['a', 'b']);
  });

  it('a failing hash frees its slot', async () => {
    const gate = createHashGate(1, 0);
    await expect(gate.run(async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(await gate.run(async () => 'next')).toBe('next');
  });
});
