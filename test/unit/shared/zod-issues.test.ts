/**
 * The messages people read for zod's built-in checks (shared/zod-issues.ts): the API's details,
 * the spec's problems and the settings errors say `is required`, `must be at least 60`, never
 * zod's default English; a message a schema sets itself is kept.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { problemsOf } from '../../../shared/zod-issues';

const schema = z
  .object({
    name: z.string(),
    ttl: z.number().int().min(60).max(28_800),
    protocol: z.enum(['shell', 'diagnostics']),
    targets: z.array(z.string()).min(1).max(8),
    label: z.string().min(3),
    id: z.string().regex(/^a+$/, 'must be letters a'),
    weight: z.number(),
    exact: z.literal('yes'),
    flag: z.boolean(),
  })
  .strict();

const messages = (input: unknown) => Object.fromEntries(problemsOf(schema.safeParse(input).error!.issues).map((p) => [p.path, p.message]));

describe('readable validation messages', () => {
  it('says what is wrong in words, for each kind of check', () => {
    expect(messages({ ttl: 1.5, protocol: 'ssh', targets: [], label: 'a', id: 'b', weight: Number.NaN, exact: 'no', flag: 'x', extra: 1 })).toEqual({
      name: 'is required',
      ttl: 'must be a whole number',
      protocol: 'must be one of shell, diagnostics',
      targets: 'must not be empty',
      label: 'must be at least 3 characters',
      id: 'must be letters a',
      weight: 'must be a finite number',
      exact: 'must be "yes"',
      flag: 'must be true or false',
      extra: 'unknown field',
    });
  });

  it('names the bounds of numbers and lists', () => {
    const out = messages({ name: 1, ttl: 5, protocol: 'shell', targets: Array(9).fill('x'), label: 'abc', id: 'a', weight: '2', exact: 'yes', flag: true });
    expect(out).toEqual({ name: 'must be a string', ttl: 'must be at least 60', targets: 'must have at most 8 items', weight: 'must be a number' });
    expect(messages({ name: 'n', ttl: 30_000, protocol: 'shell', targets: ['x'], label: 'abc', id: 'a', weight: 1, exact: 'yes', flag: true })).toEqual({
      ttl: 'must be at most 28800',
    });
  });
});
