/**
 * @module The ingress's one error type: a code the docker runtime can branch on, and a message
 * for the operator's log (it names files and commands, so it never goes into an HTTP response).
 */

export const INGRESS_ERRORS = {
  /** No HAProxy binary: the message names the Debian package. */
  haproxy_missing: 'HAProxy is not installed',
  /** HAProxy refused the configuration or could not bind its address. */
  haproxy_failed: 'HAProxy did not start',
  /** The runtime API (the admin socket) failed or answered something unexpected. */
  runtime_api: 'the HAProxy runtime API failed',
  /** Every backend slot holds a service already. */
  no_free_slot: 'no free backend slot',
  /** An option of the ingress (its address, run directory, slot count) it cannot use. */
  invalid_options: 'invalid ingress options',
  /** A service name, server name, address or weight that the ingress cannot route. */
  invalid_route: 'invalid route',
  /** The ingress object was closed or stopped. */
  closed: 'the ingress is closed',
} as const;

export type IngressErrorCode = keyof typeof INGRESS_ERRORS;

export class IngressError extends Error {
  constructor(
    readonly code: IngressErrorCode,
    message: string = INGRESS_ERRORS[code],
  ) {
    super(message);
    this.name = 'IngressError';
  }
}
