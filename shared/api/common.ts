/**
 * @module What the HTTP resources of `shared/api/` share: the registry that names response schemas
 * for the OpenAPI document (`components.schemas.<id>`), the timestamp every record carries, the
 * `meta` of a page, and the query parameters that page through lists. Zod and data only: the API
 * validates and documents with these schemas, the CLI and the console `import type` their types.
 */
import { z } from 'zod';

/** The named schemas of the OpenAPI document: `components.schemas.<id>`. */
export const models = z.registry<{ id: string }>();

/** Registers `schema` as `components.schemas.<id>` and returns it. */
export function named<S extends z.ZodType>(id: string, schema: S): S {
  models.add(schema, { id });
  return schema;
}

export const timestamp = named('Timestamp', z.iso.datetime().describe('an ISO 8601 UTC date-time with milliseconds'));

/** A count: a whole number, zero or more. */
export const count = z.int().min(0);

/** `meta` of a page of a list: `{status: 200, data: [item], meta}`. */
export const listMeta = named('ListMeta', z.strictObject({ page: z.int().min(1), per_page: z.int().min(1), total: z.int().min(0) }));
export type ListMeta = z.infer<typeof listMeta>;

/** A whole number in a query string, within bounds, with a default when absent. */
export const intParam = (min: number, max: number, fallback: number) =>
  z
    .string()
    .regex(/^\d{1,9}$/, 'must be a whole number')
    .transform(Number)
    .pipe(z.number().int().min(min).max(max))
    .default(fallback);

/** An ISO 8601 date-time, normalised to UTC with milliseconds for comparison with stored times. */
export const dateTimeParam = z
  .string()
  .refine((s) => z.iso.datetime({ offset: true }).safeParse(s).success, 'must be an ISO 8601 date-time')
  .transform((s) => new Date(s).toISOString());

/** `page` ≥ 1 (default 1) and `per_page` within 1..max (default `fallback`). */
export const pagingParams = (maxPerPage: number, fallbackPerPage: number) => ({
  page: intParam(1, 1_000_000, 1),
  per_page: intParam(1, maxPerPage, fallbackPerPage),
});

/** The most a request body may hold; more is 413 `payload_too_large`. */
export const MAX_BODY_BYTES = 1024 * 1024;

/** `{}`: what a POST that takes no input may carry. */
export const emptyBody = z.strictObject({});
