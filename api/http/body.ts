/**
 * @module Reads request bodies with a size cap (413 past 1 MiB, checked before and while
 * reading) and parses JSON bodies (400 with the parser's complaint when malformed).
 */
import type { Context } from 'koa';
import { MAX_BODY_BYTES } from '../../shared/api/common';
import { ApiError, badRequest } from '../errors';

const tooLarge = () => new ApiError('payload_too_large', `request body exceeds ${MAX_BODY_BYTES} bytes`);

/** The raw body, at most `limit` bytes; read once, so a second call (after a middleware's) gets it again. */
export async function readRawBody(ctx: Context, limit = MAX_BODY_BYTES): Promise<Buffer> {
  const read = ctx.state.rawBody as Buffer | undefined;
  if (read) return read;
  ctx.state.rawBody = await readUncached(ctx, limit);
  return ctx.state.rawBody as Buffer;
}

async function readUncached(ctx: Context, limit: number): Promise<Buffer> {
  const declared = Number(ctx.get('content-length') || 0);
  if (declared > limit) throw tooLarge();
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) {
      // Stop reading: the client gets the 413 and the connection is not kept alive.
      ctx.set('Connection', 'close');
      throw tooLarge();
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size);
}

/**
 * The JSON body, or `{}` when the body is empty. Any content type is read as JSON, so a
 * `curl -d '{...}'` without a header works as users expect.
 */
export async function readJsonBody(ctx: Context): Promise<unknown> {
  const raw = await readRawBody(ctx);
  const text = raw.toString('utf8').trim();
  if (text === '') return {};
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw badRequest(`malformed JSON body: ${(err as Error).message}`);
  }
}
