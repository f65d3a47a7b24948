/**
 * @module A session and its stream, from the browser: open the session (when one of yours of the
 * same protocol is open on that device, only once you said to replace it; when someone else's is,
 * saying whose and since when), connect to its `websocket_url` (the ticket in it is the stream's
 * credential), and speak the protocol's frames (docs/session-streams.md). The frames and close
 * codes are those of `shared/protocol/session-stream.ts`; the client is the browser's own WebSocket, as
 * `shared/websocket/client.ts` is Node's.
 */
import type { Me } from '../../shared/api/identity';
import type { SessionHolder } from '../../shared/api/errors';
import type { OpenSessionBody, Session } from '../../shared/api/sessions';
import type { SessionProtocol } from '../../shared/protocol/control-channel';
import {
  deviceFrame,
  frames,
  STREAM_CLOSE,
  streamNotice,
  type DownloadDone,
  type Request,
  type Response,
  type ShellExit,
  type ShellFlow,
  type ShellResize,
  type StreamNotice,
} from '../../shared/protocol/session-stream';
import { parseTextFrame } from '../../shared/protocol/text-frame';
import { api, ApiError } from './api';
import { h, replace, timeAgo } from './dom';
import { formatTime } from './format';

export interface StreamClose {
  code: number;
  reason: string;
}

/** Asks whether to close your own open session (`holder` says when it was opened); true: replace it. */
export type AskReplace = (holder: SessionHolder) => Promise<boolean>;

/** "3 min ago, at 2025-10-10 12:00:00": when a session was opened, for people. */
const since = (iso: string) => `${timeAgo(iso)}, at ${formatTime(iso)}`;

/**
 * Opens a session. When the device's session of that protocol is open already: yours is closed
 * and the open tried again only if `ask` says so (it may be your `tether shell` in another
 * window); someone else's is not touched, and the Error says whose it is and since when.
 */
export async function openSession(device: string, protocol: SessionProtocol, ask: AskReplace): Promise<Session> {
  const body: OpenSessionBody = { device_id: device, protocol };
  for (let asked = false; ; asked = true) {
    try {
      return await api<Session>('POST', '/v1/remote-access/sessions', body);
    } catch (err) {
      if (!(err instanceof ApiError) || err.code !== 'conflict' || !err.holder) throw err;
      const holder = err.holder;
      const me = await api<Me>('GET', '/v1/me');
      if (holder.opened_by !== me.username) {
        throw new Error(
          `${holder.opened_by} holds the ${protocol} session on ${device} (opened ${since(holder.opened_at)}). ` +
            `A device has one ${protocol} session at a time: try again once it is closed (it closes when no client has been connected to it for a while).`,
        );
      }
      if (asked || !(await ask(holder)))
        throw new Error(`Your ${protocol} session on ${device} (opened ${since(holder.opened_at)}) stays open; this page opened none.`);
      const q = new URLSearchParams({ device_id: device, protocol, status: 'open' });
      const open = await api<Session[]>('GET', `/v1/remote-access/sessions?${q}`);
      for (const s of open.filter((x) => x.opened_by === me.username)) {
        await api('DELETE', `/v1/remote-access/sessions/${s.session_id}`).catch((e: unknown) => {
          if (!(e instanceof ApiError && e.status === 404)) throw e; // closed meanwhile
        });
      }
    }
  }
}

/**
 * An AskReplace that asks in `where`: your session's age, and a button to replace it or keep it.
 * Nothing is closed until you press one.
 */
export function askInPage(where: HTMLElement, device: string, protocol: string): AskReplace {
  return (holder) =>
    new Promise<boolean>((resolve) => {
      const answer = (yes: boolean) => {
        replace(where);
        resolve(yes);
      };
      replace(
        where,
        h(
          'div',
          { class: 'card', role: 'alertdialog', 'aria-labelledby': 'replace-question', id: 'replace-session' },
          h(
            'p',
            { id: 'replace-question' },
            `Your ${protocol} session on ${device} is already open (opened ${since(holder.opened_at)}), perhaps in tether on the command line or in another tab. ` +
              'Replacing it closes it, and ends whatever runs in it.',
          ),
          h(
            'div',
            { class: 'actions' },
            h('button', { type: 'button', id: 'replace-confirm', onclick: () => answer(true) }, 'Replace it'),
            h('button', { type: 'button', id: 'replace-cancel', onclick: () => answer(false) }, 'Keep it'),
          ),
        ),
      );
      where.querySelector<HTMLButtonElement>('#replace-cancel')?.focus();
    });
}

/** A frame answering a request: an answer, or the end of a download. */
export type Answer = Response | DownloadDone;

export class SessionStream {
  readonly ws: WebSocket;
  readonly opened: Promise<void>;
  readonly closed: Promise<StreamClose>;
  #binary: ((data: Uint8Array) => void) | undefined;
  #exit: ((exit: ShellExit) => void) | undefined;
  #notice: ((notice: StreamNotice) => void) | undefined;
  #waiting = new Map<number, (answer: Answer) => void>();
  #nextId = 1;

  constructor(url: string) {
    this.ws = new WebSocket(url);
    this.ws.binaryType = 'arraybuffer';
    this.opened = new Promise((resolve, reject) => {
      this.ws.addEventListener('open', () => resolve(), { once: true });
      this.ws.addEventListener('close', () => reject(new Error('the stream closed before it opened')), { once: true });
    });
    this.opened.catch(() => {});
    this.closed = new Promise((resolve) => this.ws.addEventListener('close', (e) => resolve({ code: e.code, reason: e.reason }), { once: true }));
    this.ws.addEventListener('message', (e: MessageEvent<ArrayBuffer | string>) => {
      if (typeof e.data !== 'string') return this.#binary?.(new Uint8Array(e.data));
      // Only the frames a device sends and the relay's notices (shared/protocol/session-stream.ts);
      // anything else is dropped, so a newer server's frames cannot break an older console.
      const frame = parseTextFrame(deviceFrame, e.data);
      if (!frame) {
        const notice = parseTextFrame(streamNotice, e.data);
        if (notice) this.#notice?.(notice);
        return;
      }
      if ('id' in frame) this.#waiting.get(frame.id)?.(frame);
      else this.#exit?.(frame);
    });
  }

  onBinary(f: (data: Uint8Array) => void): void {
    this.#binary = f;
  }

  /** The shell exited (its code). */
  onExit(f: (exit: ShellExit) => void): void {
    this.#exit = f;
  }

  /** The relay says something about the session (it expires soon). */
  onNotice(f: (notice: StreamNotice) => void): void {
    this.#notice = f;
  }

  sendJson(message: ShellResize | ShellFlow | Request): void {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(message));
  }

  sendBytes(data: Uint8Array): void {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(data);
  }

  /**
   * Sends a request and calls `onAnswer` with each frame answering it (an upload and a download
   * are answered more than once), until `onAnswer` returns true.
   */
  request(op: string, params: Record<string, unknown>, onAnswer: (answer: Answer) => boolean): number {
    const id = this.#nextId++;
    this.#waiting.set(id, (answer) => {
      if (onAnswer(answer)) this.#waiting.delete(id);
    });
    this.sendJson(frames.request(id, op, params));
    return id;
  }

  /** A request answered once: its result, or an Error with the device's message. */
  call<T>(op: string, params: Record<string, unknown> = {}): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.request(op, params, (answer) => {
        if ('ok' in answer && answer.ok) resolve(answer.result as T);
        else reject(new Error('ok' in answer ? answer.error.message : 'the device refused'));
        return true;
      });
      void this.closed.then((c) => reject(new Error(closeWords(c))));
    });
  }

  close(): void {
    if (this.ws.readyState === WebSocket.OPEN || this.ws.readyState === WebSocket.CONNECTING) this.ws.close(1000, 'console done');
  }
}

/** What each close code means, in plain words (docs/session-streams.md, close codes). */
const CLOSE_WORDS: Readonly<Record<number, string>> = {
  [STREAM_CLOSE.normal]: 'the stream ended',
  [STREAM_CLOSE.serverShutdown]: 'the server or the device is shutting down',
  [STREAM_CLOSE.sessionClosed]: 'the session was closed',
  [STREAM_CLOSE.sessionExpired]: 'the session expired',
  [STREAM_CLOSE.unknownSession]: 'the server does not know this session or refused its ticket',
  [STREAM_CLOSE.busy]: 'another client is connected to this session',
  [STREAM_CLOSE.noCredentials]: 'your token is no longer valid',
  [STREAM_CLOSE.deviceTimeout]: 'the device did not answer in time',
};

/** A stream's close code in plain words, with its reason when the words do not already say it. */
export function closeWords({ code, reason }: StreamClose): string {
  // A reason that says it all ("session closed: its access grant was revoked") stands alone.
  if (reason && /^session (closed|expired):/.test(reason)) return `the ${reason}`;
  const words = CLOSE_WORDS[code];
  return `${words ?? 'the connection closed'}${reason && !words?.includes(reason) ? ` (${reason})` : ''}`;
}
