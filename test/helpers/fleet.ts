/** Fleet test helpers: a service account's token scoped to tenants, a client that names its tenant, VINs. */
import { client, type Client } from './http';
import type { Stack } from './stack';

/** A syntactically valid VIN numbered n (unique per n, no check digit asked for). */
export const VIN = (n: number) => `1HGCM82633A${String(n).padStart(6, '0')}`;

/** Creates a service account and returns a token for it with these scopes on these tenants. */
export async function fleetToken(stack: Stack, username: string, scopes: string[], tenants: string[]): Promise<string> {
  await stack.admin.post('/v1/users', { username, role: null, kind: 'service' });
  return (await stack.admin.post('/v1/tokens', { username, scopes, tenants })).body.data.token as string;
}

/** A client that always sends X-Tenant-ID. */
export function tenantClient(stack: Stack, token: string, tenant: string): Client {
  const c = client(stack.url, token);
  const h = (extra?: Record<string, string>) => ({ 'x-tenant-id': tenant, ...extra });
  return {
    get: (path, headers) => c.get(path, h(headers)),
    post: (path, body, headers) => c.post(path, body, h(headers)),
    put: (path, body, headers) => c.put(path, body, h(headers)),
    del: (path, headers) => c.del(path, h(headers)),
    raw: (method, path, body, headers) => c.raw(method, path, body, h(headers)),
  };
}

/**
 * The clients the fleet tests act as, each a service account of its own (`${prefix}-acme`, …):
 * `acme` and `globex` read and write their tenant's fleet, `reader` only reads acme's.
 */
export async function fleetClients(stack: Stack, prefix: string): Promise<{ acme: Client; globex: Client; reader: Client }> {
  const rw = ['fleet:read', 'fleet:write'];
  return {
    acme: tenantClient(stack, await fleetToken(stack, `${prefix}-acme`, rw, ['acme']), 'acme'),
    globex: tenantClient(stack, await fleetToken(stack, `${prefix}-globex`, rw, ['globex']), 'globex'),
    reader: tenantClient(stack, await fleetToken(stack, `${prefix}-reader`, ['fleet:read'], ['acme']), 'acme'),
  };
}
