/** @module The OpenAPI operations of access policies and requests (./routes.ts). */
import {
  accessPolicy,
  accessRequest,
  createPolicyBody,
  createRequestBody,
  policiesQuery,
  requestsQuery,
  reviewBody,
  revokeBody,
} from '../../shared/api/access';
import { listBody, okBody } from '../openapi/envelopes';
import type { OperationSpec } from '../openapi/operation';

const requestBody = okBody('AccessRequestResponse', accessRequest);
const requestId = { requestId: 'the request’s id (areq_…)' };
const reviewed = (verb: 'approve' | 'deny', event: string): OperationSpec => ({
  method: 'post',
  path: `/v1/access-requests/{requestId}/${verb}`,
  operationId: `${verb}AccessRequest`,
  tag: 'access',
  summary: verb === 'approve' ? 'Approve a pending request: the grant starts now' : 'Deny a pending request',
  description:
    `Administrator, scope \`sessions:write\`, not the requester (403 \`self_review_forbidden\`). \`reason\` is recorded with the review. ` +
    (verb === 'approve' ? '`starts_at` is now, `ends_at` now + `duration_seconds`. ' : '') +
    `Audited (\`${event}\`, the reviewer as actor); published.`,
  auth: 'bearer',
  params: requestId,
  body: { schema: reviewBody },
  responses: { 200: { description: 'the request as reviewed', json: requestBody } },
  errors: {
    400: 'malformed body',
    403: 'not an administrator, scope missing, or your own request (`self_review_forbidden`)',
    404: 'no such request',
    409: 'not pending (reviewed, canceled, or expired)',
  },
});

export const accessOperations: OperationSpec[] = [
  {
    method: 'post',
    path: '/v1/access-policies',
    operationId: 'createAccessPolicy',
    tag: 'access',
    summary: 'Require an approved request for protocols on devices matched by labels',
    description:
      'Administrator, scope `identity:write`. A device matches when it has every label of `match.labels`; a session of one of `protocols` on it then ' +
      'needs an approved access request of the caller, for every role. `max_duration_seconds` (60–604800, default 3600) bounds a request’s duration.',
    auth: 'bearer',
    idempotent: true,
    body: { schema: createPolicyBody },
    responses: { 201: { description: 'the policy', json: okBody('AccessPolicyCreatedResponse', accessPolicy, 201) } },
    errors: { 400: 'malformed body', 403: 'not an administrator, or scope missing' },
  },
  {
    method: 'get',
    path: '/v1/access-policies',
    operationId: 'listAccessPolicies',
    tag: 'access',
    summary: 'The live access policies, oldest first',
    description: 'Developer and up, scope `sessions:read`: anyone who may open sessions sees which devices ask for a request.',
    auth: 'bearer',
    query: policiesQuery,
    responses: { 200: { description: 'a page of policies', json: listBody('AccessPolicyListResponse', accessPolicy) } },
    errors: { 400: 'an unknown or malformed query parameter', 403: 'role or scope missing' },
  },
  {
    method: 'delete',
    path: '/v1/access-policies/{policyId}',
    operationId: 'deleteAccessPolicy',
    tag: 'access',
    summary: 'Delete an access policy',
    description: 'Administrator, scope `identity:write`. It stops applying at once; requests made under it keep their history.',
    auth: 'bearer',
    params: { policyId: 'the policy’s id (apol_…)' },
    responses: { 204: { description: 'deleted' } },
    errors: { 403: 'not an administrator, or scope missing', 404: 'no such policy, or already deleted' },
  },
  {
    method: 'post',
    path: '/v1/access-requests',
    operationId: 'createAccessRequest',
    tag: 'access',
    summary: 'Ask for access to a device',
    description:
      'Scope `sessions:write`, and the role that may open a session of each protocol (as opening one). A live policy must match the device and name ' +
      'one of `protocols`. `duration_seconds`: 60 up to the smallest maximum of those policies (the default). The request stays `pending` for ' +
      'TETHER_ACCESS_REQUEST_TTL_SECONDS (`expires_at`), then ends `expired`. Audited (`access_request.created`); published.',
    auth: 'bearer',
    idempotent: true,
    body: { schema: createRequestBody },
    responses: { 201: { description: 'the request, pending', json: okBody('AccessRequestCreatedResponse', accessRequest, 201) } },
    errors: {
      400: 'malformed body',
      403: 'role or scope missing for a protocol',
      404: 'no such device',
      422: 'no policy asks for a request for these protocols on the device, or a duration over the policy’s maximum',
    },
  },
  {
    method: 'get',
    path: '/v1/access-requests',
    operationId: 'listAccessRequests',
    tag: 'access',
    summary: 'Access requests, newest first',
    description: 'Your own (administrators: all, or one `requester`’s). Developer and up, scope `sessions:read`. Requests are never deleted.',
    auth: 'bearer',
    query: requestsQuery,
    responses: { 200: { description: 'a page of requests', json: listBody('AccessRequestListResponse', accessRequest) } },
    errors: { 400: 'an unknown or malformed query parameter', 403: 'role or scope missing' },
  },
  {
    method: 'get',
    path: '/v1/access-requests/{requestId}',
    operationId: 'getAccessRequest',
    tag: 'access',
    summary: 'An access request',
    description: 'Its requester or an administrator, scope `sessions:read`; anyone else gets 404.',
    auth: 'bearer',
    params: requestId,
    responses: { 200: { description: 'the request', json: requestBody } },
    errors: { 403: 'role or scope missing', 404: 'no such request, or not yours' },
  },
  {
    method: 'delete',
    path: '/v1/access-requests/{requestId}',
    operationId: 'cancelAccessRequest',
    tag: 'access',
    summary: 'Cancel your pending request',
    description: 'Its requester, scope `sessions:write`. The request stays, `canceled`. Audited (`access_request.canceled`); published.',
    auth: 'bearer',
    params: requestId,
    responses: { 200: { description: 'the request, canceled', json: requestBody } },
    errors: { 403: 'scope missing, or not your request (an administrator denies it instead)', 404: 'no such request, or not yours', 409: 'not pending' },
  },
  reviewed('approve', 'access_request.approved'),
  reviewed('deny', 'access_request.denied'),
  {
    method: 'post',
    path: '/v1/access-requests/{requestId}/revoke',
    operationId: 'revokeAccessRequest',
    tag: 'access',
    summary: 'End a grant now',
    description:
      'Administrator, scope `sessions:write`. The request becomes `revoked`; the sessions opened under it close at once (`access_revoked`). ' +
      'Audited (`access_request.revoked`, with the reason if given); published.',
    auth: 'bearer',
    params: requestId,
    body: { schema: revokeBody },
    responses: { 200: { description: 'the request, revoked', json: requestBody } },
    errors: { 400: 'malformed body', 403: 'not an administrator, or scope missing', 404: 'no such request', 409: 'not an approved grant that has not ended' },
  },
];
