/** @module The device registry and agent presence (docs/http-api.md, endpoints). */
import Router from '@koa/router';
import { z } from 'zod';
import { requireAccess } from '../access';
import { principalOf } from '../http/auth';
import { rateLimit, type RateLimiter } from '../http/rate-limit';
import { offsetOf, pagingParams, parseBody, parseQuery } from '../http/validate';
import { notFound } from '../errors';
import type { Identity } from '../identity/identity';
import type { Sessions } from '../sessions/sessions';
import type { Store } from '../store/index';
import type { RelayPort } from '../ports';
import { ok, okList } from '../http/envelope';

export const DEVICE_ID_PATTERN = /^[A-Za-z0-9._-]{1,64}$/;
export const deviceIdSchema = z.string().regex(DEVICE_ID_PATTERN, 'must be 1-64 characters of [A-Za-z0-9._-]');

export const DEVICE_LIST_PER_MINUTE = 120;

const newDeviceBody = z.strictObject({
  device_id: deviceIdSchema,
  labels: z
    .record(z.string().min(1).max(64), z.string().max(256))
    .refine((l) => Object.keys(l).length <= 64, 'at most 64 labels')
    .optional(),
});

const listQuery = z.strictObject({
  ...pagingParams(200, 50),
  agent_status: z.enum(['online', 'offline']).optional(),
});

export interface DeviceRoutesDeps {
  store: Store;
  identity: Identity;
  sessions: Sessions;
  relay: RelayPort;
  listLimiter: RateLimiter;
}

export function deviceRoutes({ store, identity, sessions, relay, listLimiter }: DeviceRoutesDeps): Router {
  const router = new Router();

  function deviceOr404(id: string) {
    const device = DEVICE_ID_PATTERN.test(id) ? store.devices.get(id) : undefined;
    if (!device) throw notFound(`no device ${id}`);
    return device;
  }

  router.post('/v1/devices', async function addDevice(ctx) {
    const body = await parseBody(ctx, newDeviceBody);
    requireAccess(principalOf(ctx), 'devices:write', 'administrator', 'registering devices');
    ok(ctx, identity.createDevice(body.device_id, body.labels ?? {}), 201);
  });

  router.get('/v1/devices', rateLimit(listLimiter, DEVICE_LIST_PER_MINUTE), function listDevices(ctx) {
    const q = parseQuery(ctx, listQuery);
    requireAccess(principalOf(ctx), 'devices:read', 'developer');
    const { items, total } = store.devices.list({ agent_status: q.agent_status, limit: q.per_page, offset: offsetOf(q) });
    okList(ctx, items, q, total);
  });

  router.get('/v1/devices/:id', function getDevice(ctx) {
    requireAccess(principalOf(ctx), 'devices:read', 'developer');
    ok(ctx, deviceOr404(ctx.params.id!));
  });

  router.get('/v1/devices/:id/agent-status', function getAgentStatus(ctx) {
    requireAccess(principalOf(ctx), 'devices:read', 'developer');
    const d = deviceOr404(ctx.params.id!);
    ok(ctx, { device_id: d.device_id, agent_status: d.agent_status, last_seen_at: d.last_seen_at });
  });

  router.delete('/v1/devices/:id', function deleteDevice(ctx) {
    requireAccess(principalOf(ctx), 'devices:write', 'administrator', 'deleting devices');
    const { device_id } = deviceOr404(ctx.params.id!);
    const closed = sessions.closeAllOfDevice(device_id, 'device_deleted');
    store.devices.delete(device_id);
    relay.deviceDeleted(device_id);
    ok(ctx, { device_id, deleted: true, sessions_closed: closed.length });
  });

  return router;
}
