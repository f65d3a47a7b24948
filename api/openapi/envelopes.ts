/**
 * @module The envelopes around every answer, as named schemas of the document: `{status, data}`,
 * lists with `meta`, the fleet interface's `{status: "success", data, timestamp, request_id}`
 * (api/http/envelope.ts and api/fleet/envelope.ts write them).
 */
import { z } from 'zod';
import { listMeta, named, timestamp } from '../../shared/api/common';

/** `{status, data}` with `status` the HTTP status. */
export const okBody = (id: string, data: z.ZodType, status = 200) => named(id, z.strictObject({ status: z.literal(status), data }));

/** A page of a list: `{status: 200, data: [item], meta}`. */
export const listBody = (id: string, item: z.ZodType) => named(id, z.strictObject({ status: z.literal(200), data: z.array(item), meta: listMeta }));

/** The fleet interface's success envelope. */
export const fleetBody = (id: string, data: z.ZodType) => named(id, z.strictObject({ status: z.literal('success'), data, timestamp, request_id: z.string() }));
