/**
 * @module The table of access requests and what may be done to each: administrators approve or
 * deny others' pending requests and revoke live grants, each with a reason asked in the page;
 * requesters cancel their pending ones. The server decides (a self-review is refused with
 * `self_review_forbidden`): what it answers is shown as it said it.
 */
import type { AccessRequest } from '../../../../shared/api/access';
import type { Me } from '../../../../shared/api/identity';
import { api } from '../../api';
import { errorBox, h, replace, table } from '../../dom';
import { formatTime, timeElement } from '../../format';
import { isAdmin } from '../../roles';
import { askReason } from './ask-reason';
import { countdownText, durationText, isLive, protocolWords } from './words';

export interface RequestActionDeps {
  me: Me | undefined;
  /** Where a question about one request, and what the server answered, go. */
  panel: HTMLElement;
  /** Reads the list again. */
  changed: () => void;
}

const requestPath = (r: AccessRequest) => `/v1/access-requests/${encodeURIComponent(r.request_id)}`;

/** Asks for a reason (unless `reason` is false), sends, and says what the server answered. */
async function act(
  deps: RequestActionDeps,
  question: string,
  action: string,
  reason: 'required' | 'optional' | false,
  danger: boolean,
  send: (reason?: string) => Promise<string>,
): Promise<void> {
  let why: string | undefined;
  if (reason) {
    const answered = await askReason(deps.panel, question, action, { required: reason === 'required', danger });
    if (answered === null) return;
    why = answered === '' ? undefined : answered;
  }
  try {
    replace(deps.panel, h('p', { role: 'status', class: 'muted' }, await send(why)));
  } catch (err) {
    replace(deps.panel, errorBox((err as Error).message));
  }
  deps.changed();
}

function actionsOf(r: AccessRequest, deps: RequestActionDeps): HTMLElement {
  const mine = r.requester === deps.me?.username;
  const admin = isAdmin(deps.me);
  const who = `${r.requester}’s request for ${r.device_id}`;
  const button = (attr: string, label: string, onclick: () => void, danger = false) =>
    h('button', { type: 'button', [attr]: r.request_id, class: danger ? 'danger' : undefined, onclick }, label);
  return h(
    'div',
    { class: 'actions row-actions' },
    // Not on your own: the server refuses a self-review anyway (self_review_forbidden).
    admin &&
      r.status === 'pending' &&
      !mine &&
      button(
        'data-approve',
        'Approve',
        () =>
          void act(deps, `Approve ${who}? The grant runs ${durationText(r.duration_seconds)} from now.`, 'Approve', 'required', false, async (reason) => {
            const done = await api<AccessRequest>('POST', `${requestPath(r)}/approve`, { reason });
            return `Approved: ${done.requester} may use ${done.device_id} until ${done.ends_at ? formatTime(done.ends_at) : 'its end'}.`;
          }),
      ),
    admin &&
      r.status === 'pending' &&
      !mine &&
      button(
        'data-deny',
        'Deny',
        () =>
          void act(deps, `Deny ${who}?`, 'Deny', 'required', true, async (reason) => {
            await api<AccessRequest>('POST', `${requestPath(r)}/deny`, { reason });
            return `Denied ${who}.`;
          }),
        true,
      ),
    admin &&
      r.status === 'approved' &&
      button(
        'data-revoke',
        'Revoke',
        () =>
          void act(deps, `Revoke ${who}? Its open sessions close at once.`, 'Revoke', 'optional', true, async (reason) => {
            await api<AccessRequest>('POST', `${requestPath(r)}/revoke`, reason === undefined ? {} : { reason });
            return `Revoked ${who}; its sessions are closed.`;
          }),
        true,
      ),
    mine &&
      r.status === 'pending' &&
      button(
        'data-cancel',
        'Cancel',
        () =>
          void act(deps, '', '', false, false, async () => {
            await api('DELETE', requestPath(r));
            return `Canceled your request for ${r.device_id}.`;
          }),
      ),
  );
}

/** The grant's window: from–to, and a countdown (`data-ends`, ticked by the page) while it is live. */
function windowOf(r: AccessRequest): HTMLElement | string {
  if (!r.starts_at || !r.ends_at) return '';
  const to = r.revoked_at && r.revoked_at < r.ends_at ? r.revoked_at : r.ends_at;
  return h(
    'span',
    {},
    timeElement(r.starts_at),
    ' – ',
    timeElement(to),
    isLive(r) && h('span', { class: 'countdown', 'data-ends': r.ends_at, 'data-countdown': r.request_id }, ` (${countdownLeft(r.ends_at)} left)`),
  );
}

const countdownLeft = (endsAt: string) => countdownText((Date.parse(endsAt) - Date.now()) / 1000);

/** Updates every countdown under `root`; true when one has run out (the list should be read again). */
export function tickCountdowns(root: HTMLElement): boolean {
  let ranOut = false;
  for (const el of root.querySelectorAll<HTMLElement>('[data-ends]')) {
    const ends = el.dataset.ends!;
    if (Date.parse(ends) <= Date.now()) ranOut = true;
    el.textContent = ` (${countdownLeft(ends)} left)`;
  }
  return ranOut;
}

/** Who reviewed it and why; who revoked it and why. */
function reviewOf(r: AccessRequest): HTMLElement | string {
  const parts: Array<HTMLElement | string> = [];
  const verdict = r.status === 'denied' ? 'denied by ' : 'approved by ';
  if (r.reviewed_by) parts.push(h('div', {}, verdict, h('strong', {}, r.reviewed_by), r.review_reason ? `: ${r.review_reason}` : ''));
  if (r.revoked_by) parts.push(h('div', {}, 'revoked by ', h('strong', {}, r.revoked_by), r.revoke_reason ? `: ${r.revoke_reason}` : ''));
  return parts.length > 0 ? h('div', {}, ...parts) : '';
}

export function requestsTable(rows: AccessRequest[], deps: RequestActionDeps, empty: string): HTMLElement {
  return table(
    rows,
    {
      Status: (r) => h('span', { class: `status ${r.status}`, 'data-status': r.status, 'data-request-status': r.request_id }, r.status),
      Requester: (r) => r.requester,
      Device: (r) => h('a', { href: `#/devices/${encodeURIComponent(r.device_id)}`, 'data-request-device': r.request_id }, r.device_id),
      Protocols: (r) => r.protocols.map(protocolWords).join(', '),
      Reason: (r) => h('span', { class: 'reason', 'data-request-reason': r.request_id }, r.reason),
      Duration: (r) => durationText(r.duration_seconds),
      Created: (r) => timeElement(r.created_at),
      Review: reviewOf,
      Grant: windowOf,
      '': (r) => actionsOf(r, deps),
    },
    empty,
  );
}
