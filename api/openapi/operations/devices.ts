/** @module The device registry and agent presence (api/devices/routes.ts). */
import { z } from 'zod';
import { emptyBody, listQuery, newDeviceBody } from '../../devices/routes';
import { listBody, okBody } from '../envelopes';
import { device, timestamp } from '../models';
import type { OperationSpec } from '../operation';

const id = { id: 'the device’s id' };
const agentToken = z.string().describe('the device’s agent token, shown this once');

export const deviceOperations: OperationSpec[] = [
  {
    method: 'post',
    path: '/v1/devices',
    operationId: 'registerDevice',
    tag: 'devices',
    summary: 'Register a device',
    description: 'Administrator, scope `devices:write`. The answer holds the agent token, shown this once.',
    auth: 'bearer',
    idempotent: true,
    etag: { of: 'the device', always: true },
    body: { schema: newDeviceBody },
    responses: {
      201: {
        description: 'the device',
        json: okBody(
          'DeviceCreatedResponse',
          z.strictObject({ device_id: z.string(), agent_status: z.literal('offline'), agent_token: agentToken }),
          201,
        ),
      },
    },
    errors: { 400: 'malformed body', 403: 'role or scope missing', 409: 'the device exists' },
  },
  {
    method: 'get',
    path: '/v1/devices',
    operationId: 'listDevices',
    tag: 'devices',
    summary: 'Devices, by id',
    description: 'Developer and up, scope `devices:read`; 120 requests a minute per user.',
    auth: 'bearer',
    query: listQuery,
    responses: { 200: { description: 'a page of devices', json: listBody('DeviceListResponse', device) } },
    errors: { 400: 'an unknown or malformed query parameter', 403: 'role or scope missing', 429: 'over 120 requests a minute' },
  },
  {
    method: 'get',
    path: '/v1/devices/{id}',
    operationId: 'getDevice',
    tag: 'devices',
    summary: 'A device',
    description: 'Developer and up, scope `devices:read`. Its `ETag` covers what operators change (labels, its token), not its agent’s presence.',
    auth: 'bearer',
    params: id,
    etag: { of: 'the device', always: true },
    responses: { 200: { description: 'the device', json: okBody('DeviceResponse', device) } },
    errors: { 403: 'role or scope missing', 404: 'no such device' },
  },
  {
    method: 'get',
    path: '/v1/devices/{id}/agent-status',
    operationId: 'getAgentStatus',
    tag: 'devices',
    summary: 'Whether the device’s agent is connected',
    description: 'Developer and up, scope `devices:read`.',
    auth: 'bearer',
    params: id,
    responses: {
      200: {
        description: 'its agent’s presence',
        json: okBody(
          'AgentStatusResponse',
          z.strictObject({ device_id: z.string(), agent_status: z.enum(['online', 'offline']), last_seen_at: timestamp.nullable() }),
        ),
      },
    },
    errors: { 403: 'role or scope missing', 404: 'no such device' },
  },
  {
    method: 'delete',
    path: '/v1/devices/{id}',
    operationId: 'deleteDevice',
    tag: 'devices',
    summary: 'Delete a device',
    description: 'Administrator, scope `devices:write`. Its open sessions close (`device_deleted`) and its agent is disconnected.',
    auth: 'bearer',
    params: id,
    ifMatch: 'the device’s ETag (GET /v1/devices/{id})',
    responses: {
      200: {
        description: 'deleted',
        json: okBody(
          'DeviceDeletedResponse',
          z.strictObject({ device_id: z.string(), deleted: z.literal(true), sessions_closed: z.int().min(0) }),
        ),
      },
    },
    errors: { 403: 'role or scope missing', 404: 'no such device' },
  },
  {
    method: 'post',
    path: '/v1/devices/{id}/agent-token',
    operationId: 'rotateAgentToken',
    tag: 'devices',
    summary: 'Replace a device’s agent token',
    description: 'Administrator, scope `devices:write`. The old token stops working and its agent is disconnected.',
    auth: 'bearer',
    params: id,
    idempotent: true,
    etag: { of: 'the device', always: true },
    ifMatch: 'the device’s ETag (GET /v1/devices/{id})',
    body: { schema: emptyBody, required: false, description: 'nothing, or `{}`' },
    responses: {
      200: {
        description: 'the new agent token',
        json: okBody('AgentTokenResponse', z.strictObject({ device_id: z.string(), agent_token: agentToken })),
      },
    },
    errors: { 400: 'a body other than {}', 403: 'role or scope missing', 404: 'no such device' },
  },
];
