import { describe, expect, it } from 'vitest';
import { createMailbox } from '../../../cli/mailbox';

describe('mailbox', () => {
  it('hands items out in the order they came, to waits made before or after', async () => {
    const box = createMailbox<number>();
    const first = box.take();
    box.put(1);
    box.put(2);
    box.put(3);
    expect(await first).toBe(1);
    expect(await box.take()).toBe(2);
    expect(await box.take()).toBe(3);
  });

  it('rejects waits on failure, after the items kept before it are taken', async () => {
    const box = createMailbox<string>();
    const waiting = box.take();
    const boom = new Error('closed');
    box.fail(boom);
    await expect(waiting).rejects.toBe(boom);

    const kept = createMailbox<string>();
    kept.put('answer');
    kept.fail(boom);
    kept.put('too late');
    expect(await kept.take()).toBe('answer');
    await expect(kept.take()).rejects.toBe(boom);
  });

  it('keeps the first failure', async () => {
    const box = createMailbox<number>();
    const first = new Error('first');
    box.fail(first);
    box.fail(new Error('second'));
    await expect(box.take()).rejects.toBe(first);
  });
});
