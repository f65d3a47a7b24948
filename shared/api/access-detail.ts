/**
 * @module What a session refused for want of an access grant (403 `access_request_required`,
 * CONTRACT 10.3) carries as its `details`: the device, the protocol, the policies that ask for a
 * request and the command that asks. Apart from ./access.ts (which re-exports it) so that the
 * error catalogue (./errors.ts) can describe the 403 body without importing the whole resource.
 */
import { z } from 'zod';
import { SESSION_PROTOCOLS } from '../protocol/control-channel';

export const accessRequiredDetail = z.strictObject({
  device_id: z.string(),
  protocol: z.enum(SESSION_PROTOCOLS),
  policies: z.array(z.strictObject({ policy_id: z.string(), name: z.string(), max_duration_seconds: z.int() })),
  /** The CLI command that asks, e.g. `tether access request cam-7 --protocol shell --reason "…"`. */
  request_command: z.string(),
});
export type AccessRequiredDetail = z.infer<typeof accessRequiredDetail>;
