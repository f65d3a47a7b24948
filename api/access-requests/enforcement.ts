/**
 * @module The rule access policies make (CONTRACT 10.3): a session of a protocol on a device that
 * a live policy matches (by labels) and names that protocol for needs an approved grant of the
 * caller covering the device and protocol, running now. Every role is subject to it,
 * administrators included: four eyes means nobody opens a protected device alone. Refused: 403
 * `access_request_required`, with the command that asks.
 */
import type { AccessRequest } from '../../shared/api/access';
import type { AccessRequiredDetail } from '../../shared/api/access-detail';
import type { SessionProtocol } from '../../shared/protocol/control-channel';
import { ApiError } from '../errors';
import type { Device } from '../store/devices';
import type { Store } from '../store/index';
import type { Principal } from '../store/tokens';

/** The command that asks for access to `deviceId` and `protocol`, as the CLI takes it. */
export const requestCommand = (deviceId: string, protocol: SessionProtocol): string => `tether access request ${deviceId} --protocol ${protocol} --reason "…"`;

/**
 * The grant a session of `protocol` on `device` opens under: undefined when no live policy asks
 * for one; the caller's live grant when one does; otherwise 403 `access_request_required`.
 */
export async function requireGrant(
  store: Store,
  principal: Principal,
  device: Device,
  protocol: SessionProtocol,
  at: string,
): Promise<AccessRequest | undefined> {
  const policies = (await store.access.policiesFor(device.labels)).filter((p) => p.protocols.includes(protocol));
  if (policies.length === 0) return undefined;
  const grant = await store.access.liveGrant(principal.username, device.device_id, protocol, at);
  if (grant) return grant;
  const detail: AccessRequiredDetail = {
    device_id: device.device_id,
    protocol,
    policies: policies.map(({ policy_id, name, max_duration_seconds }) => ({ policy_id, name, max_duration_seconds })),
    request_command: requestCommand(device.device_id, protocol),
  };
  const names = policies.map((p) => `"${p.name}"`).join(', ');
  throw new ApiError(
    'access_request_required',
    `the device ${device.device_id} needs an approved access request for ${protocol} (access policy ${names}): ${detail.request_command}`,
    undefined,
    undefined,
    { accessRequired: detail },
  );
}
