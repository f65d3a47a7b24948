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
