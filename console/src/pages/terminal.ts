/**
 * @module A shell on a device in xterm.js: keystrokes and resizes go to the device, output comes
 * back with flow control (xterm's write callbacks count what is not drawn yet; past a high-water
 * mark the console asks the device to pause the terminal, and to resume once drawn), so `yes`
 * never freezes the page and Ctrl-C gets through at once. Ctrl+Shift+C copies the selection and
 * Ctrl+Shift+V pastes. The exit code shows when the shell ends; leaving the page closes the session.
 */
import { FitAddon } from '@xterm/addon-fit';
import { Terminal } from '@xterm/xterm';
import type { Session } from '../../../shared/api/sessions';
import { api } from '../api';
import { frames } from '../../../shared/protocol/session-stream';
import { errorBox, h, replace } from '../dom';
import type { Cleanup } from '../page';
import { askInPage, closeWords, openSession, SessionStream } from '../session-stream';

/** Output handed to xterm but not drawn yet: above HIGH the device pauses, below LOW it resumes. */
const HIGH = 256 * 1024;
const LOW = 32 * 1024;

export async function terminalPage(root: HTMLElement, [id]: string[]): Promise<Cleanup> {
  const status = h('p', { id: 'terminal-status', class: 'muted', 'aria-live': 'polite' }, 'Opening a shell…');
  const question = h('div', { id: 'session-question' });
  const box = h('div', { id: 'terminal', class: 'terminal' });
  replace(root, h('h1', {}, 'Shell on ', h('a', { href: `#/devices/${encodeURIComponent(id!)}` }, id!)), status, question, box);

  let session: Session;
  try {
    session = await openSession(id!, 'shell', askInPage(question, id!, 'shell'));
  } catch (err) {
    // Someone else's shell, or yours kept: say so instead of "Opening a shell…" for ever.
    replace(status, errorBox((err as Error).message));
    box.remove();
    return () => {};
  }
  const stream = new SessionStream(session.websocket_url!);
  const term = new Terminal({ cursorBlink: true, fontSize: 14, scrollback: 5000, fontFamily: 'ui-monospace, Menlo, Consolas, monospace' });
  const fit = new FitAddon();
  term.loadAddon(fit);
  term.open(box);
  (window as unknown as { tetherTerminal: Terminal }).tetherTerminal = term; // tests and the curious read its buffer
  const encoder = new TextEncoder();

  term.attachCustomKeyEventHandler((e) => {
    if (e.type !== 'keydown' || !e.ctrlKey || !e.shiftKey) return true;
    if (e.code === 'KeyC') {
      void navigator.clipboard?.writeText(term.getSelection());
      return false;
    }
    if (e.code === 'KeyV') {
      void navigator.clipboard?.readText().then((text) => term.paste(text));
      return false;
    }
    return true;
  });
  term.onData((data) => stream.sendBytes(encoder.encode(data)));
  term.onBinary((data) => stream.sendBytes(Uint8Array.from(data, (c) => c.charCodeAt(0))));
  term.onResize(({ cols, rows }) => stream.sendJson(frames.resize(cols, rows)));

  let pending = 0;
  let paused = false;
  stream.onBinary((data) => {
    pending += data.length;
    term.write(data, () => {
      pending -= data.length;
      if (paused && pending < LOW) {
        paused = false;
        stream.sendJson({ type: 'resume' });
      }
    });
    if (!paused && pending > HIGH) {
      paused = true;
      stream.sendJson({ type: 'pause' });
    }
  });
  stream.onExit((exit) => replace(status, `The shell exited with code ${exit.code}.`));
  void stream.closed.then((c) => {
    if (!status.textContent?.startsWith('The shell exited')) replace(status, `Disconnected: ${closeWords(c)}.`);
    term.options.disableStdin = true;
  });

  try {
    await stream.opened;
  } catch (err) {
    replace(status, errorBox((err as Error).message));
  }
  replace(status, `Connected to ${id}. Ctrl+Shift+C copies, Ctrl+Shift+V pastes.`);
  const refit = () => {
    try {
      fit.fit();
    } catch {
      // not laid out yet
    }
  };
  refit();
  stream.sendJson(frames.resize(term.cols, term.rows));
  const observer = new ResizeObserver(refit);
  observer.observe(box);
  term.focus();

  return () => {
    observer.disconnect();
    stream.close();
    term.dispose();
    void api('DELETE', `/v1/remote-access/sessions/${session.session_id}`).catch(() => {});
  };
}
