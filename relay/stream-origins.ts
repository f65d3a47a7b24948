/**
 * @module Which web pages may open session streams (CSWSH, docs/session-streams.md): browsers say
 * where a page comes from (`Origin`), and only the console's own origin, or one the operator
 * named (TETHER_CONSOLE_ORIGINS), is let in. Clients that are not browsers send no Origin.
 */

const LOOPBACK_NAMES = ['localhost', '127.0.0.1', '[::1]'];
const isLoopback = (hostname: string): boolean => LOOPBACK_NAMES.includes(hostname) || /^127(\.\d{1,3}){3}$/.test(hostname);

/**
 * The browser origins whose pages may open session streams: the public URL's own and the ones
 * the operator named. Never the request's own Host: a DNS-rebinding page (evil.example resolved
 * to this server) sends a Host that matches its Origin. A loopback host has several names, so on
 * one every loopback name with the same scheme and port is the same origin (the console at
 * http://localhost:8080 of a server on 127.0.0.1:8080): only pages on this machine can have them.
 */
export function streamOrigins(publicUrl: string | undefined, allowed: readonly string[]): ReadonlySet<string> {
  const origins = new Set(allowed);
  if (publicUrl === undefined || !URL.canParse(publicUrl)) return origins;
  const url = new URL(publicUrl);
  origins.add(url.origin);
  const port = url.port === '' ? '' : `:${url.port}`;
  if (isLoopback(url.hostname)) for (const name of LOOPBACK_NAMES) origins.add(`${url.protocol}//${name}${port}`);
  return origins;
}

/** A browser's `Origin` may open a stream only when it is one of `origins`, exactly as browsers serialise it (RFC 6454 §6.1). */
export function originAllowed(origin: string, origins: ReadonlySet<string>): boolean {
  return origins.has(origin);
}
