/**
 * @module zod's issues as problems people read: one `{path, message}` per problem, the path
 * written `a.b[0].c`, each unknown key a problem of its own at its own path. The API's error
 * details, the agent's `bad_params`, and the server's and agent's settings errors all use it.
 *
 * Importing it makes zod's messages English: classic `zod` sets that up itself, `zod/mini` (the
 * agent's schemas) leaves every message at "Invalid input" until a locale is configured.
 */
import { en } from 'zod/locales';
import * as z from 'zod/mini';

z.config(en());
z.config({ customError: readableMessage });

const TYPE_NAMES: Record<string, string> = {
  string: 'a string',
  number: 'a number',
  int: 'a whole number',
  boolean: 'true or false',
  object: 'an object',
  array: 'a list',
  bigint: 'a whole number',
};
const plural = (n: number | bigint, one: string, many: string) => `${n} ${Number(n) === 1 ? one : many}`;

/**
 * What a person reads for zod's built-in checks: `is required`, `must be at least 60`, `must be
 * one of a, b` — not zod's default English (`Invalid input: expected string, received undefined`,
 * `Too small: expected number to be >=60`). A message a schema sets itself wins over this one;
 * `undefined` leaves the issue to the locale.
 */
function readableMessage(issue: z.core.$ZodRawIssue): string | undefined {
  switch (issue.code) {
    case 'invalid_type': {
      if (issue.input === undefined) return 'is required';
      if (issue.expected === 'number' && typeof issue.input === 'number') return 'must be a finite number';
      const name = TYPE_NAMES[issue.expected];
      return name ? `must be ${name}` : undefined;
    }
    case 'too_small':
    case 'too_big': {
      const small = issue.code === 'too_small';
      const bound = small ? issue.minimum : issue.maximum;
      const exclusive = issue.inclusive === false;
      const word = small ? (exclusive ? 'more than' : 'at least') : exclusive ? 'less than' : 'at most';
      if (issue.origin === 'string')
        return small && Number(bound) === 1 && !exclusive ? 'must not be empty' : `must be ${word} ${plural(bound, 'character', 'characters')}`;
      if (issue.origin === 'array' || issue.origin === 'set') {
        return small && Number(bound) === 1 && !exclusive ? 'must not be empty' : `must have ${word} ${plural(bound, 'item', 'items')}`;
      }
      if (issue.origin === 'number' || issue.origin === 'int' || issue.origin === 'bigint') return `must be ${word} ${String(bound)}`;
      return undefined;
    }
    case 'invalid_value':
      return issue.values.length === 1 ? `must be ${JSON.stringify(issue.values[0])}` : `must be one of ${issue.values.map((v) => String(v)).join(', ')}`;
    case 'not_multiple_of':
      return `must be a multiple of ${String(issue.divisor)}`;
    case 'invalid_union':
      return 'is not any of the accepted forms';
    default:
      return undefined;
  }
}

export interface Problem {
  /** `a.b[0].c`; `(root)` for the value itself. */
  path: string;
  message: string;
}

/** `a.b[0].c` from path segments ('' for none). */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const seg of path) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else out += out === '' ? String(seg) : `.${String(seg)}`;
  }
  return out;
}

/** One problem per issue, and one per unknown key (`unknownKey` says what to call it). */
export function problemsOf(issues: readonly z.core.$ZodIssue[], options: { prefix?: readonly PropertyKey[]; unknownKey?: string } = {}): Problem[] {
  const { prefix = [], unknownKey = 'unknown field' } = options;
  const problems: Problem[] = [];
  for (const issue of issues) {
    const path = [...prefix, ...issue.path];
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) problems.push({ path: formatPath([...path, key]), message: unknownKey });
    } else {
      problems.push({ path: formatPath(path) || '(root)', message: issue.message });
    }
  }
  return problems;
}

/** `path: message` per problem, joined by `separator`. */
export const describeProblems = (problems: readonly Problem[], separator = '; '): string => problems.map((p) => `${p.path}: ${p.message}`).join(separator);
