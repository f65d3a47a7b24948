/**
 * @module A shell on a device in xterm.js: keystrokes and resizes go to the device, output comes
 * back with flow control, so `yes` never freezes the page and Ctrl-C gets through at once;
 * Ctrl+Shift+C copies the selection and Ctrl+Shift+V pastes (terminal-io.ts). When the shell
 * ends, the session stays open: **Reconnect** starts a new shell on it; once the session is
 * closed or expired, **Open a new session** does. The session's expiry and the relay's warnings
 * show above the terminal (terminal-expiry.ts). Leaving the page closes the session.
 */
import { FitAddon } from '@xterm/addon-fit';
import { Terminal } from '@xterm/xterm';
import type { Session } from '../../../shared/api/sessions';
import { frames, STREAM_CLOSE } from '../../../shared/protocol/session-stream';
import { api, ApiError } from '../api';
import { errorBox, h, replace } from '../dom';
import type { Cleanup } from '../page';
import { askInPage, closeWords, openSession, SessionStream, type StreamClose } from '../session-stream';
import { accessRefusal } from './access/device-notice';
import { expiryView, type ExpiryView } from './terminal-expiry';
import { pipeOutput, wireInput } from './terminal-io';

/** In `again`: what the choice is, and a button that does `act` once. */
function offerIn(again: HTMLElement, words: string, buttonId: string, label: string, act: () => Promise<void>): void {
  const once = (e: Event) => {
    (e.currentTarget as HTMLButtonElement).disabled = true;
    void act();
  };
  replace(again, h('span', {}, words), h('button', { type: 'button', id: buttonId, onclick: once }, label));
  again.hidden = false;
}

/** Whether the session is still open once its stream ended (the session may not have), and until when. */
async function stillOpen(sessionId: string, c: StreamClose, expiry: ExpiryView): Promise<boolean> {
  if (c.code === STREAM_CLOSE.sessionClosed || c.code === STREAM_CLOSE.sessionExpired) return false;
  try {
    const now = await api<Session>('GET', `/v1/remote-access/sessions/${sessionId}`);
    expiry.expiresAt(now.expires_at);
    return now.status === 'open';
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) return false;
    throw err;
  }
}

export async function terminalPage(root: HTMLElement, [id]: string[]): Promise<Cleanup> {
  const device = id!;
  const status = h('p', { id: 'terminal-status', class: 'muted', 'aria-live': 'polite' }, 'Opening a shell…');
  const again = h('div', { id: 'terminal-again', class: 'actions', hidden: true });
  const question = h('div', { id: 'session-question' });
  const banner = h('div', { id: 'session-notice', class: 'notice', role: 'alert', hidden: true });
  const expiryLine = h('p', { id: 'session-expiry', class: 'muted' });
  const box = h('div', { id: 'terminal', class: 'terminal' });
  replace(
    root,
    h('h1', {}, 'Shell on ', h('a', { href: `#/devices/${encodeURIComponent(device)}` }, device)),
    status,
    again,
    question,
    banner,
    expiryLine,
    box,
  );

  let session: Session;
  try {
    session = await openSession(device, 'shell', askInPage(question, device, 'shell'));
  } catch (err) {
    // Someone else's shell, yours kept, or no grant (with the way to ask): say so instead of "Opening a shell…" for ever.
    replace(status, accessRefusal(err, device, 'shell') ?? errorBox((err as Error).message));
    box.remove();
    return () => {};
  }
  const expiry = expiryView(expiryLine, banner);
  expiry.expiresAt(session.expires_at);
  const term = new Terminal({ cursorBlink: true, fontSize: 14, scrollback: 5000, fontFamily: 'ui-monospace, Menlo, Consolas, monospace' });
  const fit = new FitAddon();
  term.loadAddon(fit);
  term.open(box);
  (window as unknown as { tetherTerminal: Terminal }).tetherTerminal = term; // tests and the curious read its buffer
  let stream: SessionStream | undefined;
  let left = false;
  wireInput(term, () => stream);
  const refit = () => {
    try {
      fit.fit();
    } catch {
      // not laid out yet
    }
  };
  const observer = new ResizeObserver(refit);
  observer.observe(box);

  const offer = (words: string, buttonId: string, label: string, act: () => Promise<void>) => offerIn(again, words, buttonId, label, act);

  /** After the stream ended: a new shell in the same session, or a new session. */
  async function offerAgain(c: StreamClose, exitCode: number | undefined): Promise<void> {
    const ended = exitCode === undefined ? `Disconnected: ${closeWords(c)}.` : `The shell exited with code ${exitCode}.`;
    let open: boolean;
    try {
      open = await stillOpen(session.session_id, c, expiry);
    } catch (err) {
      replace(status, ended);
      offer(`Could not ask whether the session is open (${(err as Error).message}).`, 'terminal-reconnect', 'Reconnect', reconnect);
      return;
    }
    if (left) return;
    replace(status, ended);
    if (open) {
      offer('The session is still open: reconnect to start a new shell in it.', 'terminal-reconnect', 'Reconnect', reconnect);
    } else {
      expiry.ended();
      offer('The session is closed; open a new one to go on.', 'terminal-new-session', 'Open a new session', reopen);
    }
  }

  /** Opens a stream on the session (a new shell) and runs it until it ends. */
  async function connect(): Promise<void> {
    again.hidden = true;
    replace(status, 'Connecting…');
    const s = new SessionStream(session.websocket_url!);
    stream = s;
    let exitCode: number | undefined;
    pipeOutput(s, term);
    s.onExit((exit) => {
      exitCode = exit.code;
      replace(status, `The shell exited with code ${exit.code}.`);
    });
    s.onNotice(expiry.notice);
    void s.closed.then((c) => {
      if (stream !== s || left) return;
      term.options.disableStdin = true;
      return offerAgain(c, exitCode);
    });
    try {
      await s.opened;
    } catch {
      return; // the close above says why
    }
    term.options.disableStdin = false;
    replace(status, `Connected to ${device}. Ctrl+Shift+C copies, Ctrl+Shift+V pastes.`);
    refit();
    s.sendJson(frames.resize(term.cols, term.rows));
    term.focus();
  }

  /** A new shell in the same session. */
  async function reconnect(): Promise<void> {
    term.write('\r\n\x1b[2m[a new shell]\x1b[0m\r\n');
    await connect();
  }

  /** A new session (the last one is closed), then a shell in it. */
  async function reopen(): Promise<void> {
    again.hidden = true;
    replace(status, 'Opening a new session…');
    try {
      session = await openSession(device, 'shell', askInPage(question, device, 'shell'));
    } catch (err) {
      replace(status, errorBox((err as Error).message));
      offer('', 'terminal-new-session', 'Open a new session', reopen);
      return;
    }
    expiry.expiresAt(session.expires_at);
    term.write('\r\n\x1b[2m[a new session]\x1b[0m\r\n');
    await connect();
  }

  await connect();

  return () => {
    left = true;
    observer.disconnect();
    expiry.stop();
    stream?.close();
    term.dispose();
    void api('DELETE', `/v1/remote-access/sessions/${session.session_id}`).catch(() => {});
  };
}
