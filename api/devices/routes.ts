/**
 * @module The device registry and agent presence (docs/http-api.md, endpoints). What each takes
 * and answers is `shared/api/devices.ts`.
 */
import Router from '@koa/router';
import type { Middleware } from 'koa';
import { emptyBody } from '../../shared/api/common';
import {
  DEVICE_ID_PATTERN,
  deviceListQuery,
  newDeviceBody,
  type AgentStatusView,
  type AgentTokenIssued,
  type Device,
  type DeviceCreated,
  type DeviceDeleted,
} from '../../shared/api/devices';
import { requireAccess } from '../access';
import { principalOf } from '../http/auth';
import { accessFirst } from '../http/idempotency';
import { rateLimit, type RateLimiter } from '../http/rate-limit';
import { offsetOf, parseBody, parseQuery } from '../http/validate';
import { notFound } from '../errors';
import { auditSourceOf } from '../audit/recorder';
import type { AuditedIdentity } from '../identity/audited';
import type { Sessions } from '../sessions/sessions';
import type { Store } from '../store/index';
import type { Relay } from '../relay';
import { ok, okList } from '../http/envelope';
import { ifMatchOf, setEtag } from '../http/etag';
import { etagOf } from '../preconditions';

export const DEVICE_LIST_PER_MINUTE = 120;

export interface DeviceRoutesDeps {
  store: Store;
  /** Registers and re-keys devices, with their audit events. */
  identity: AuditedIdentity;
  sessions: Sessions;
  relay: Relay;
  listLimiter: RateLimiter;
  /** Safe retries of the POSTs (api/http/idempotency.ts). */
  idempotent: Middleware;
}

export function deviceRoutes({ store, identity, sessions, relay, listLimiter, idempotent }: DeviceRoutesDeps): Router {
  const router = new Router();

  /** The device's tag: what operators change (labels, its token), not its agent's presence. */
  async function deviceTag(d: Device): Promise<string> {
    return etagOf(['device', d.device_id, d.created_at, d.labels, await store.devices.tokenHash(d.device_id)]);
  }

  async function deviceOr404(id: string): Promise<Device> {
    const device = DEVICE_ID_PATTERN.test(id) ? await store.devices.get(id) : undefined;
    if (!device) throw notFound(`no device ${id}`);
    return device;
  }

  router.post('/v1/devices', accessFirst('devices:write', 'administrator', 'registering devices'), idempotent, async function addDevice(ctx) {
    const body = await parseBody(ctx, newDeviceBody);
    const created = await identity.createDevice(body.device_id, body.labels ?? {}, auditSourceOf(ctx));
    setEtag(ctx, await deviceTag(await deviceOr404(created.device_id)));
    ok<DeviceCreated>(ctx, created, 201);
  });

  router.get('/v1/devices', rateLimit(listLimiter, DEVICE_LIST_PER_MINUTE), async function listDevices(ctx) {
    const q = parseQuery(ctx, deviceListQuery);
    requireAccess(principalOf(ctx), 'devices:read', 'developer');
    const { items, total } = await store.devices.list({ agent_status: q.agent_status, limit: q.per_page, offset: offsetOf(q) });
    okList<Device>(ctx, items, q, total);
  });

  router.get('/v1/devices/:id', async function getDevice(ctx) {
    requireAccess(principalOf(ctx), 'devices:read', 'developer');
    const device = await deviceOr404(ctx.params.id!);
    setEtag(ctx, await deviceTag(device));
    ok<Device>(ctx, device);
  });

  router.get('/v1/devices/:id/agent-status', async function getAgentStatus(ctx) {
    requireAccess(principalOf(ctx), 'devices:read', 'developer');
    const d = await deviceOr404(ctx.params.id!);
    ok<AgentStatusView>(ctx, { device_id: d.device_id, agent_status: d.agent_status, last_seen_at: d.last_seen_at });
  });

  router.delete('/v1/devices/:id', async function deleteDevice(ctx) {
    requireAccess(principalOf(ctx), 'devices:write', 'administrator', 'deleting devices');
    const device = await deviceOr404(ctx.params.id!);
    ifMatchOf(ctx)(await deviceTag(device));
    const { device_id } = device;
    const closed = await sessions.closeAllOfDevice(device_id, 'device_deleted');
    await identity.deleteDevice(device_id, closed.length, auditSourceOf(ctx));
    relay.deviceDeleted(device_id);
    ok<DeviceDeleted>(ctx, { device_id, deleted: true, sessions_closed: closed.length });
  });

  const rotating = accessFirst('devices:write', 'administrator', 'replacing agent tokens');
  router.post('/v1/devices/:id/agent-token', rotating, idempotent, async function rotateAgentToken(ctx) {
    await parseBody(ctx, emptyBody);
    const device = await deviceOr404(ctx.params.id!);
    ifMatchOf(ctx)(await deviceTag(device));
    const rotated = (await identity.rotateAgentToken(device.device_id, auditSourceOf(ctx)))!;
    relay.agentTokenRotated(device.device_id);
    setEtag(ctx, await deviceTag(device));
    ok<AgentTokenIssued>(ctx, rotated);
  });

  return router;
}
