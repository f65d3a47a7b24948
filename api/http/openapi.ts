/** @module The OpenAPI operations of liveness, readiness and metrics (./health.ts); none needs a token. */
import { health, notReady, ready } from '../../shared/api/health';
import type { OperationSpec } from '../openapi/operation';

export const healthOperations: OperationSpec[] = [
  {
    method: 'get',
    path: '/healthz',
    operationId: 'getHealth',
    tag: 'health',
    summary: 'The process is up',
    auth: 'public',
    responses: { 200: { description: 'up', json: health } },
    errors: {},
  },
  {
    method: 'get',
    path: '/readyz',
    operationId: 'getReadiness',
    tag: 'health',
    summary: 'The database answers (and, on a peer, its bus is connected)',
    auth: 'public',
    responses: {
      200: { description: 'ready to serve', json: ready },
      503: { description: 'the database does not answer, or a peer is not connected to its bus (docs/peers.md)', json: notReady },
    },
    errors: {},
  },
  {
    method: 'get',
    path: '/metrics',
    operationId: 'getMetrics',
    tag: 'health',
    summary: 'Prometheus metrics',
    auth: 'public',
    responses: { 200: { description: 'the Prometheus text format, version 0.0.4', media: { 'text/plain': { type: 'string' } } } },
    errors: {},
  },
];
