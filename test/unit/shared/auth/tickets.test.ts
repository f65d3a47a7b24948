/** Stream tickets (shared/auth/tickets.ts) are bound to a session and to the token they were shown to, and say which token that was. */
import { describe, expect, it } from 'vitest';
import { createTicketer, ticketDigest } from '../../../../shared/auth/tickets';

const ticketer = createTicketer(Buffer.alloc(32, 7));

describe('stream tickets', () => {
  it('name the token they were issued to, and only for their session', () => {
    const t = ticketer.issue('sess-a', 'tok_ann');
    expect(t).toMatch(/^tok_ann\.[A-Za-z0-9_-]{43}$/);
    expect(ticketer.verify('sess-a', t)).toBe('tok_ann');
    expect(ticketer.verify('sess-b', t)).toBeUndefined();
  });

  it('cannot be moved to another token: the MAC covers the token id', () => {
    const mac = ticketer.issue('sess-a', 'tok_ann').split('.')[1];
    expect(ticketer.verify('sess-a', `tok_admin.${mac}`)).toBeUndefined();
    expect(ticketer.verify('sess-a', ticketer.issue('sess-a', 'tok_ann').replace('tok_ann', 'tok_bob'))).toBeUndefined();
  });

  it('refuse what is not a ticket, and another server secret', () => {
    for (const bad of ['', 'forged', '.abc', 'tok_ann.', 'tok ann.x', `${'x'.repeat(65)}.abc`]) expect(ticketer.verify('sess-a', bad)).toBeUndefined();
    expect(createTicketer(Buffer.alloc(32, 8)).verify('sess-a', ticketer.issue('sess-a', 'tok_ann'))).toBeUndefined();
  });

  it('check the same through their digest, which does not hold the ticket', () => {
    const t = ticketer.issue('sess-a', 'tok_ann');
    const digest = ticketDigest(t);
    expect(digest).toMatch(/^tok_ann\.[0-9a-f]{64}$/);
    expect(digest).not.toContain(t.split('.')[1]);
    expect(ticketer.verifyDigest('sess-a', digest)).toBe('tok_ann');
    expect(ticketer.verifyDigest('sess-b', digest)).toBeUndefined();
    expect(ticketer.verifyDigest('sess-a', ticketDigest('forged'))).toBeUndefined();
  });
});
