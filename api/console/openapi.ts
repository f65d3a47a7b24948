/** @module The OpenAPI operations of the web console's page and assets (./routes.ts); no token needed. */
import type { OperationSpec } from '../openapi/operation';

const text = { type: 'string' };
const ASSET_TYPES = [
  'application/javascript',
  'text/css',
  'image/svg+xml',
  'image/png',
  'image/x-icon',
  'font/woff2',
  'application/json',
  'application/octet-stream',
];
const CONSOLE_HEADERS = ['Content-Security-Policy', 'Cache-Control'] as const;

export const consoleOperations: OperationSpec[] = [
  {
    method: 'get',
    path: '/',
    operationId: 'getConsolePage',
    tag: 'console',
    summary: 'The web console’s page',
    auth: 'public',
    responses: {
      200: { description: 'the page', media: { 'text/html': text }, headers: [...CONSOLE_HEADERS] },
      503: { description: 'the console is not built: how to build it', media: { 'text/plain': text }, headers: ['Content-Security-Policy'] },
    },
    errors: {},
  },
  {
    method: 'get',
    path: '/assets/{file}',
    operationId: 'getConsoleAsset',
    tag: 'console',
    summary: 'A script or stylesheet of the web console',
    description: 'Content-hashed names, cached for good; gzipped when the browser takes gzip.',
    auth: 'public',
    params: { file: 'a built asset’s name, e.g. app-3F2A1C.js' },
    responses: {
      200: {
        description: 'the asset',
        media: Object.fromEntries(ASSET_TYPES.map((type) => [type, type === 'application/json' ? { type: 'object', description: 'a source map' } : text])),
        headers: [...CONSOLE_HEADERS, 'Content-Encoding'],
      },
      404: { description: 'no such asset', media: { 'text/plain': text } },
    },
    errors: {},
  },
];
