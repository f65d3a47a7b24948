/**
 * @module Blobs over HTTP (CONTRACT 10.2): `POST /v1/blobs` streams an upload into the store
 * (never held whole; past 256 MiB it stops reading, answers 413 and keeps nothing), `GET
 * /v1/blobs/{id}` its metadata, and `GET /v1/agent/blobs/{id}` the bytes for an agent that proves
 * its device with its token (as on the control channel) and runs a file-push execution of that
 * blob now; for any other device or blob, 404.
 */
import { Readable } from 'node:stream';
import Router from '@koa/router';
import type { Context } from 'koa';
import { JOB_LIMITS, type Blob } from '../../shared/api/jobs';
import { bearerToken } from '../../shared/auth/bearer';
import { agentKey, proofMatches } from '../../shared/auth/agent-proofs';
import { AGENT_HEADERS } from '../../shared/protocol/control-channel';
import { requireAccess } from '../access';
import { ApiError, notFound, unauthorized } from '../errors';
import { principalOf } from '../http/auth';
import { ok } from '../http/envelope';
import { BlobTooLargeError } from '../store/blobs';
import type { Store } from '../store/index';

export const BLOB_MEDIA_TYPE = 'application/octet-stream';

const tooLarge = (limit: number) => new ApiError('payload_too_large', `a blob is at most ${limit} bytes`);

/** Reading stops at a refusal; the connection closes after the answer, so the rest is never read. */
function refuseBody(ctx: Context, err: ApiError): never {
  ctx.set('Connection', 'close');
  throw err;
}

/** The blob routes of operators (administrators); `limit` is JOB_LIMITS.maxBlobBytes but in tests. */
export function blobRoutes(store: Store, now: () => number, limit: number = JOB_LIMITS.maxBlobBytes): Router {
  const router = new Router();

  router.post('/v1/blobs', async function uploadBlob(ctx) {
    const p = principalOf(ctx);
    requireAccess(p, 'jobs:write', 'administrator', 'uploading a blob');
    const type = (ctx.get('content-type').split(';')[0] ?? '').trim().toLowerCase();
    if (type !== BLOB_MEDIA_TYPE) {
      refuseBody(ctx, new ApiError('unsupported_media_type', `send the file as ${BLOB_MEDIA_TYPE}; got ${type || 'no content type'}`));
    }
    const declared = Number(ctx.get('content-length') || 0);
    if (declared > limit) refuseBody(ctx, tooLarge(limit));
    try {
      const blob = await store.blobs.write(ctx.req as AsyncIterable<Buffer>, { created_by: p.username, created_at: new Date(now()).toISOString() }, limit);
      ok<Blob>(ctx, blob, 201);
    } catch (err) {
      if (err instanceof BlobTooLargeError) refuseBody(ctx, tooLarge(limit));
      throw err;
    }
  });

  router.get('/v1/blobs/:blobId', async function getBlob(ctx) {
    requireAccess(principalOf(ctx), 'jobs:read', 'administrator', 'reading a blob');
    const blob = await store.blobs.get(ctx.params.blobId!);
    if (!blob) throw notFound(`no blob ${ctx.params.blobId}`);
    ok<Blob>(ctx, blob);
  });

  return router;
}

/** The device an agent's request proves to be (its id header and its token), or 401. */
async function agentOf(store: Store, ctx: Context): Promise<string> {
  const deviceId = ctx.get(AGENT_HEADERS.deviceId);
  const token = bearerToken(ctx.get('authorization') || undefined);
  if (deviceId && token) {
    const key = await store.devices.tokenHash(deviceId);
    if (key !== undefined && proofMatches(key, agentKey(token))) return deviceId;
  }
  throw unauthorized(`an agent's request needs Authorization: Bearer <device token> and ${AGENT_HEADERS.deviceId}`);
}

/** Agents' routes: mounted before operators' authentication, since they carry device tokens. */
export function agentBlobRoutes(store: Store): Router {
  const router = new Router();
  router.get('/v1/agent/blobs/:blobId', async function fetchBlob(ctx) {
    const deviceId = await agentOf(store, ctx);
    const blobId = ctx.params.blobId!;
    // The same answer for a blob that does not exist and one this device may not read now.
    const blob = (await store.jobs.mayFetchBlob(deviceId, blobId)) ? await store.blobs.get(blobId) : undefined;
    if (!blob) throw notFound(`no blob ${blobId} for device ${deviceId} (only a file-push execution running on it may fetch one)`);
    ctx.status = 200;
    ctx.type = BLOB_MEDIA_TYPE;
    ctx.length = blob.size;
    ctx.body = Readable.from(store.blobs.read(blobId));
  });
  return router;
}
