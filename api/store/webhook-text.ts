/**
 * @module The one line a Slack-compatible webhook (`format: "slack"`) shows for an event: who did
 * what to which device, session, job or account, and why ("ann asked for shell on cam-7 for 1h:
 * fix the brakes"). Slack reads `&`, `<` and `>` as markup, so they are escaped.
 */

/** What an access event's line names beyond the audit row: the request's requester, protocols and duration. */
export interface AccessRequestFacts {
  requester: string;
  protocols: readonly string[];
  duration_seconds: number;
}

const escape = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** `3600` → `1h`, `5400` → `90m`: the largest unit that divides it. */
export function shortDuration(seconds: number): string {
  for (const [unit, s] of [
    ['d', 86_400],
    ['h', 3600],
    ['m', 60],
  ] as const) {
    if (seconds >= s && seconds % s === 0) return `${seconds / s}${unit}`;
  }
  return `${seconds}s`;
}

const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

function accessLine(event: string, data: Record<string, unknown>, facts: AccessRequestFacts | undefined): string {
  const actor = str(data.actor) ?? 'someone';
  const device = str(data.device_id) ?? 'a device';
  const requester = facts?.requester ?? 'someone';
  const what = facts ? `${facts.protocols.join(', ')} on ${device}` : `access to ${device}`;
  const span = facts ? ` for ${shortDuration(facts.duration_seconds)}` : '';
  const why = str(data.reason) === undefined ? '' : `: ${str(data.reason)}`;
  switch (event) {
    case 'access_request.created':
      return `${actor} asked for ${what}${span}${why}`;
    case 'access_request.approved':
      return `${actor} approved ${requester}'s request for ${what}${span}${why}`;
    case 'access_request.denied':
      return `${actor} denied ${requester}'s request for ${what}${why}`;
    case 'access_request.canceled':
      return `${actor} canceled the request for ${what}`;
    case 'access_request.expired':
      return `${requester}'s request for ${what} expired unanswered`;
    case 'access_request.revoked':
      return `${actor} revoked ${requester}'s access to ${what}${why}`;
    default:
      return `${event} by ${actor} on ${device}${why}`;
  }
}

/** A line for every other event: the event, its actor, what it concerns, and its reason. */
function genericLine(event: string, data: Record<string, unknown>): string {
  const parts = [`${event} by ${str(data.actor) ?? 'someone'}`];
  if (str(data.session_id)) parts.push(`${str(data.protocol) ?? ''} session ${str(data.session_id)} on ${str(data.device_id) ?? '?'}`.trim());
  else if (str(data.job_id)) parts.push(`job ${str(data.job_id)}`);
  const target = data.target as { kind?: unknown; id?: unknown } | undefined;
  if (target && str(target.id)) parts.push(`${str(target.kind) ?? 'target'} ${str(target.id)}`);
  const reason = str(data.reason);
  return parts.join(': ') + (reason === undefined ? '' : ` (${reason})`);
}

/** The text of a Slack-compatible body for `event` with `data` (as the audit listing shows it). */
export function slackText(event: string, data: Record<string, unknown>, facts?: AccessRequestFacts): string {
  const line = event.startsWith('access_request.') ? accessLine(event, data, facts) : genericLine(event, data);
  return escape(`[tether] ${line}`);
}
