/**
 * @module The device agent: keeps its control channel to the relay (./control-link) and follows
 * the relay's session messages: a table of its sessions with their expiry, which it enforces on
 * its own (./sessions), and the data streams it dials for them (./stream-dialer); and runs the
 * relay's job attempts, reporting them until acknowledged (./jobs). Built from its config; dials
 * only in `start()`.
 */
import { createBackoff, type Backoff } from './backoff';
import type { Logger } from '../shared/log';
import type { AgentConfig } from './config';
import { createControlLink, type AgentState, type SessionMessage } from './control-link';
import { openUploadJournal, type UploadJournal } from './file-transfer/upload-journal';
import { blobUrlOn } from './jobs/blob-fetch';
import { createJobTable } from './jobs/job-table';
import { runWork } from './jobs/run-work';
import { createReconnectPolicy } from './reconnect';
import { createServerChoice } from './servers';
import { SessionTable, type EndReason, type KnownSession } from './sessions';
import type { ShellPool } from './shell/shell-pool';
import { createStreamDialer } from './stream-dialer';

export type { AgentState } from './control-link';

export interface AgentDeps {
  log: Logger;
  /** Wall clock (ms), for session expiry times. */
  now?: () => number;
  backoff?: Backoff;
  /**
   * How long to wait between tries once the server has refused this agent's token three times in
   * a row (default 5 min). Not a setting: tests that run the agent in-process shorten it.
   */
  refusedRetryMs?: number;
  /** Until the relay's welcome says otherwise. */
  heartbeatMs?: number;
  /** Called on every state change (tests and the entry point's logs). */
  onState?: (state: AgentState) => void;
}

/** A connection that lived this long counts as stable and resets the backoff. */
export const STABLE_CONNECTION_MS = 10_000;

export function createAgent(config: Readonly<AgentConfig>, deps: AgentDeps) {
  const { log } = deps;
  const now = deps.now ?? Date.now;
  const backoff = deps.backoff ?? createBackoff({ baseMs: 1000, maxMs: 30_000, stableMs: STABLE_CONNECTION_MS });
  const servers = createServerChoice(config, log);
  const link = createControlLink(config, {
    log,
    backoff,
    reconnect: createReconnectPolicy({ backoff, longMs: deps.refusedRetryMs }),
    servers,
    heartbeatMs: deps.heartbeatMs ?? 20_000,
    onMessage,
    onWelcome: () => jobs.connected(),
    onState: deps.onState,
  });

  // Pre-started shells, from the first shell session on (when the agent keeps them at all).
  let shells: ShellPool | undefined;
  const shellPool = (create: (log: Logger) => ShellPool) => (config.warmShell && link.state !== 'stopped' ? (shells ??= create(log)) : undefined);
  // Opened in start(): it first undoes what uploads of an earlier run left unfinished.
  let uploads: UploadJournal | undefined;
  const streams = createStreamDialer(config, {
    log,
    send: (msg) => link.send(msg),
    streamUrl: (msg) => servers.streamUrlFor(msg),
    shells: shellPool,
    uploadJournal: () => uploads!.begin(),
  });
  // Job attempts: run and reported until acknowledged, across reconnects (./jobs/job-table).
  const jobs = createJobTable({
    log,
    send: (msg) => link.send(msg),
    run: (work, ctx) => runWork(work, { ...ctx, config, blobUrl: (blobId) => blobUrlOn(servers.current, blobId), journal: () => uploads!.begin() }),
  });
  const sessions = new SessionTable(now, function onSessionEnd(session: KnownSession, reason: EndReason) {
    log.info('session ended', { session_id: session.sessionId, protocol: session.protocol, reason });
    void streams.endSession(session.sessionId, reason).then(() => link.send({ type: 'session.ended', session_id: session.sessionId }));
  });

  function onMessage(msg: SessionMessage): void {
    switch (msg.type) {
      case 'session.opened':
        sessions.add({ sessionId: msg.session_id, protocol: msg.protocol, expiresAt: Date.parse(msg.expires_at) });
        log.info('session opened', { session_id: msg.session_id, protocol: msg.protocol, expires_at: msg.expires_at });
        break;
      case 'session.close':
        sessions.end(msg.session_id, msg.reason);
        void streams.endSession(msg.session_id, msg.reason); // also when this agent never heard of the session
        break;
      case 'stream.open':
        // The expiry travels with every stream request, so even an agent that restarted after
        // the session was opened enforces it on its own.
        if (!sessions.get(msg.session_id)) {
          sessions.add({ sessionId: msg.session_id, protocol: msg.protocol, expiresAt: Date.parse(msg.expires_at) });
        }
        if (Date.parse(msg.expires_at) <= now()) {
          link.send({ type: 'stream.refused', stream_id: msg.stream_id, message: 'the session has expired' });
          break;
        }
        streams.open(msg);
        break;
      case 'job.run':
      case 'job.ack':
      case 'job.cancel':
        jobs.onMessage(msg);
        break;
    }
  }

  return {
    /** Starts dialing the relay; returns at once. */
    start(): void {
      if (link.state !== 'stopped') return;
      uploads = openUploadJournal(config.stateDir, config.deviceId, log);
      jobs.start();
      link.start();
    },

    /** Ends every session, closes the connection and stops reconnecting. */
    async stop(): Promise<void> {
      if (link.state === 'stopped') return;
      link.halt();
      sessions.endAll('agent_stopping');
      await Promise.all([streams.stopAll(), jobs.stop()]);
      shells?.stop();
      shells = undefined;
      uploads?.close();
      await link.close();
    },

    get state(): AgentState {
      return link.state;
    },
    sessions,
    streams,
    jobs,
  };
}
export type Agent = ReturnType<typeof createAgent>;
