/**
 * @module Validation at the edge: zod schemas for bodies and query strings, failures turned into
 * 400 `bad_request` with one `details` entry per problem. Handlers get typed values back.
 */
import type { Context } from 'koa';
import { z } from 'zod';
import { badRequest, type ErrorDetail } from '../errors';
import { describeProblems, problemsOf } from '../../shared/zod-issues';
import { readJsonBody } from './body';

/** One detail per problem; unknown keys get one detail each, at their own path. */
export const issuesToDetails = (issues: readonly z.core.$ZodIssue[], prefix: PropertyKey[] = []): ErrorDetail[] => problemsOf(issues, { prefix });

/** Parses `value` or throws 400 with every problem listed. */
export function parseOrThrow<S extends z.ZodType>(schema: S, value: unknown, what: string): z.output<S> {
  const result = schema.safeParse(value);
  if (!result.success) {
    const details = issuesToDetails(result.error.issues);
    throw badRequest(`invalid ${what}: ${describeProblems(details)}`, details);
  }
  return result.data;
}

export async function parseBody<S extends z.ZodType>(ctx: Context, schema: S): Promise<z.output<S>> {
  return parseOrThrow(schema, await readJsonBody(ctx), 'request body');
}

/** Parses the query string; a parameter given twice is an error, not an array. */
export function parseQuery<S extends z.ZodType>(ctx: Context, schema: S): z.output<S> {
  const query: Record<string, string> = {};
  const duplicates: ErrorDetail[] = [];
  for (const [key, value] of Object.entries(ctx.query)) {
    if (Array.isArray(value)) duplicates.push({ path: key, message: 'query parameter given more than once' });
    else if (value !== undefined) query[key] = value;
  }
  if (duplicates.length > 0) throw badRequest('invalid query: a parameter was given more than once', duplicates);
  return parseOrThrow(schema, query, 'query');
}

export interface Paging {
  page: number;
  per_page: number;
}

export const offsetOf = (p: Paging): number => (p.page - 1) * p.per_page;
