/**
 * @module What a device page says about access requests: when a live policy matches the device
 * (by its labels), which protocols need an approved request, and the user's own grant (until
 * when, by whom) or a link to the request form prefilled; and, when opening a session is refused
 * for want of a grant (403 `access_request_required`), the server's message with the same link.
 */
import type { AccessPolicy, AccessRequest } from '../../../../shared/api/access';
import type { Me } from '../../../../shared/api/identity';
import type { SessionProtocol } from '../../../../shared/protocol/control-channel';
import { ApiError, apiList } from '../../api';
import { h, replace } from '../../dom';
import { timeElement } from '../../format';
import type { Cleanup } from '../../page';
import { mayOpen } from '../../roles';
import { followAccess } from './live';
import { isLive, matchingPolicies, PROTOCOLS, protocolList, requestLink } from './words';

/** The "Request access" link to the form, prefilled with the device and protocols. */
export const requestAccessLink = (deviceId: string, protocols: readonly SessionProtocol[], id = 'request-access') =>
  h('a', { class: 'button', href: requestLink(deviceId, protocols), id }, 'Request access');

/**
 * When `err` is a refusal for want of a grant: the server's message (it names the CLI command)
 * and the link to ask from here; otherwise undefined (the caller shows the error as it does).
 */
export function accessRefusal(err: unknown, deviceId: string, protocol: SessionProtocol): HTMLElement | undefined {
  if (!(err instanceof ApiError) || err.code !== 'access_request_required') return undefined;
  return h(
    'div',
    { class: 'notice access-refused', role: 'alert', 'data-refused': protocol },
    h('p', { class: 'refusal-message' }, err.message),
    h('div', { class: 'actions' }, requestAccessLink(deviceId, [protocol], `request-access-${protocol}`)),
  );
}

/** One grant in words: "Granted until 2026-11-26 14:05:00 by bob (shell)". */
function grantLine(r: AccessRequest): HTMLElement {
  return h(
    'p',
    { 'data-grant': r.request_id },
    'Granted until ',
    timeElement(r.ends_at),
    ` by ${r.reviewed_by ?? 'an administrator'} (${protocolList(r.protocols).toLowerCase()}).`,
  );
}

/**
 * The notice for `device`, empty while no policy matches; read again on each access event about
 * the device. What the user may not read (the policies) leaves it empty: the server still decides.
 */
export function accessNotice(device: { device_id: string; labels: Record<string, string> }, me: Me | undefined): { element: HTMLElement; stop: Cleanup } {
  const element = h('div', { id: 'access-notice' });
  /** A grant's end has no event: the notice is read again when the first one runs out. */
  let ending: ReturnType<typeof setTimeout> | undefined;

  async function refresh(): Promise<void> {
    let matched: AccessPolicy[];
    try {
      matched = matchingPolicies((await apiList<AccessPolicy>('/v1/access-policies?per_page=200')).data, device.labels);
    } catch {
      return replace(element);
    }
    if (matched.length === 0) return replace(element);
    const needed = PROTOCOLS.filter((p) => matched.some((m) => m.protocols.includes(p)));
    let mine: AccessRequest[] = [];
    try {
      const q = new URLSearchParams({ device_id: device.device_id, per_page: '50' });
      if (me) q.set('requester', me.username);
      mine = (await apiList<AccessRequest>(`/v1/access-requests?${q}`)).data.filter((r) => r.requester === me?.username);
    } catch {
      // without the user's requests, the notice still says what is needed
    }
    const grants = mine.filter((r) => isLive(r));
    clearTimeout(ending);
    const firstEnd = Math.min(...grants.map((r) => Date.parse(r.ends_at!)));
    if (Number.isFinite(firstEnd)) ending = setTimeout(() => follow.poke(), Math.min(firstEnd - Date.now() + 500, 2 ** 31 - 1));
    const covered = new Set(grants.flatMap((r) => r.protocols));
    // Only what the user's role may open: the server refuses a request for more.
    const missing = needed.filter((p) => !covered.has(p) && mayOpen(me, p));
    const pending = mine.filter((r) => r.status === 'pending');
    replace(
      element,
      h(
        'div',
        { class: 'notice access-needed', 'data-protocols': needed.join(',') },
        h(
          'p',
          { class: 'access-needed-text' },
          h('strong', {}, `${protocolList(needed)} on this device ${needed.length === 1 ? 'needs' : 'need'} an approved access request`),
          ` (policy ${matched.map((m) => `“${m.name}”`).join(', ')}).`,
        ),
        ...grants.map(grantLine),
        ...pending.map((r) =>
          h('p', { class: 'muted', 'data-pending': r.request_id }, 'Your request is waiting for review since ', timeElement(r.created_at), '.'),
        ),
        missing.length > 0 && h('div', { class: 'actions' }, requestAccessLink(device.device_id, missing)),
      ),
    );
  }

  // `data-checked` once the policies were read: an empty notice then means no policy matches.
  const follow = followAccess(
    () => refresh().then(() => void (element.dataset.checked = 'true')),
    (e) => e.device_id === device.device_id,
  );
  return {
    element,
    stop() {
      clearTimeout(ending);
      follow.stop();
    },
  };
}
