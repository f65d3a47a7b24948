/** @module The OpenAPI operation of a session's recording (./routes.ts). */
import { recordingQuery } from '../../shared/api/sessions';
import type { OperationSpec } from '../openapi/operation';

export const recordingOperations: OperationSpec[] = [
  {
    method: 'get',
    path: '/v1/remote-access/sessions/{sessionId}/recording',
    operationId: 'getSessionRecording',
    tag: 'sessions',
    summary: 'A session’s recording',
    description:
      'asciicast v2, or with `format=text` its output with escapes stripped. Its owner or an administrator, scope ' +
      '`sessions:read`. Every read is an audit event `recording.viewed`.',
    auth: 'bearer',
    params: { sessionId: 'the session’s id (sess-…)' },
    query: recordingQuery,
    responses: {
      200: {
        description: 'the recording (up to its last written batch while in progress)',
        media: { 'application/x-asciicast': { type: 'string' }, 'text/plain': { type: 'string' } },
        headers: ['Content-Disposition'],
      },
    },
    errors: { 400: 'an unknown query parameter or format', 403: 'role or scope missing', 404: 'no such session, not yours, or no recording' },
  },
];
