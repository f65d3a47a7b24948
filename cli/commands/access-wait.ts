/**
 * @module Waiting for the decision on an access request (`tether access request --wait`): woken
 * by the request's `access_request.*` events on `GET /v1/events`, it reads the request itself
 * (`GET /v1/access-requests/{id}`, the one word that counts) at each event, every 10 s besides
 * in case one was missed, and every 2 s when the events cannot be read. Ctrl-C stops waiting and
 * leaves the request pending. A server that cannot be reached for 2 minutes ends the wait.
 */
import type { AccessRequest } from '../../shared/api/access';
import { readOrPassingFailure } from '../api-client';
import type { Context } from '../context';
import { CliError } from '../errors';
import { followEvents } from '../event-stream';

const POLL_MS = 2000;
const POLL_WITH_EVENTS_MS = 10_000;
/** How long the server may be unreachable (a restart) before waiting gives up. */
const OUTAGE_MS = 120_000;

export interface Waited {
  request: AccessRequest;
  /** Ctrl-C stopped the waiting (the request stays as it is). */
  interrupted: boolean;
}

/** Waits until request `created` is no longer pending, or Ctrl-C. */
export async function waitForDecision(ctx: Context, created: AccessRequest, announce?: () => void): Promise<Waited> {
  const id = created.request_id;
  let request = created;
  let interrupted = false;
  let wake = () => {};
  let changed = false;
  const onChange = () => {
    changed = true;
    wake();
  };
  const onSigint = () => {
    interrupted = true;
    wake();
  };
  // What changed before the stream opened is read once it is open.
  const events = followEvents(
    ctx,
    // Each says only that the request changed: the request itself is read then.
    (name, data) => name.startsWith('access_request.') && (data as { request_id?: unknown }).request_id === id && onChange(),
    onChange,
  );
  let failingSince: number | undefined;
  process.on('SIGINT', onSigint);
  announce?.();
  events.ensure();
  try {
    while (!interrupted && request.status === 'pending') {
      const every = events.open ? POLL_WITH_EVENTS_MS : POLL_MS;
      await new Promise<void>((resolve) => {
        if (changed || interrupted) return resolve();
        const timer = setTimeout(resolve, every);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      if (interrupted) break;
      changed = false;
      const read = await readOrPassingFailure<AccessRequest>(ctx.api(), `/v1/access-requests/${encodeURIComponent(id)}`);
      if (read instanceof CliError) {
        if (failingSince === undefined) ctx.notice(`lost the server (${read.message}); trying again`);
        failingSince ??= performance.now();
        if (performance.now() - failingSince > OUTAGE_MS) throw read;
        continue;
      }
      if (failingSince !== undefined) ctx.notice('reached the server again');
      failingSince = undefined;
      request = read;
      events.ensure();
    }
  } finally {
    process.off('SIGINT', onSigint);
    events.stop();
  }
  return { request, interrupted };
}
