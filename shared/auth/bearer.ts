/**
 * @module The token of an `Authorization: Bearer <token>` header (RFC 6750 §2.1), read the same
 * way by the API and the relay: the scheme in any case, one or more spaces, a token68.
 */
const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*)$/i;

export function bearerToken(header: string | undefined): string | undefined {
  return header ? BEARER.exec(header.trim())?.[1] : undefined;
}
