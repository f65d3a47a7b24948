/**
 * @module The sessions the relay told this agent about, each with its own expiry timer, so a
 * session ends on the device when its TTL runs out even if the relay's close never arrives.
 */
import type { StreamEndReason } from '../shared/protocol/session-stream';

/** Why the agent ends a session: what the relay said, or the agent stopping. */
export type EndReason = StreamEndReason;

export interface KnownSession {
  sessionId: string;
  protocol: string;
  expiresAt: number;
}

export class SessionTable {
  #sessions = new Map<string, { session: KnownSession; timer: NodeJS.Timeout }>();

  constructor(
    private readonly now: () => number,
    /** Called once per session when it ends, whatever the cause. */
    private readonly onEnd: (session: KnownSession, reason: EndReason) => void,
  ) {}

  /** Remembers a session and arms its expiry. */
  add(session: KnownSession): void {
    this.end(session.sessionId, 'closed', false);
    const delay = Math.min(Math.max(0, session.expiresAt - this.now()), 2 ** 31 - 1);
    const timer = setTimeout(() => this.end(session.sessionId, 'expired'), delay);
    timer.unref();
    this.#sessions.set(session.sessionId, { session, timer });
  }

  get(sessionId: string): KnownSession | undefined {
    return this.#sessions.get(sessionId)?.session;
  }

  /** Ends a session (idempotent); `notify` false replaces it silently. */
  end(sessionId: string, reason: EndReason, notify = true): void {
    const known = this.#sessions.get(sessionId);
    if (!known) return;
    clearTimeout(known.timer);
    this.#sessions.delete(sessionId);
    if (notify) this.onEnd(known.session, reason);
  }

  /** Ends every session (the agent is stopping). */
  endAll(reason: EndReason): void {
    for (const id of [...this.#sessions.keys()]) this.end(id, reason);
  }

  get size(): number {
    return this.#sessions.size;
  }
}
