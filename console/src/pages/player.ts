/**
 * @module A session's recording played in xterm.js at its own pace: play and pause (space), a
 * seek bar (drag it, or the arrow keys on it), speed, long pauses shortened (player-timeline.ts),
 * and the terminal scaled to the window at the recording's own size (player-fit.ts); the cast
 * can also be downloaded for asciinema or an auditor.
 */
import { Terminal } from '@xterm/xterm';
import type { Session } from '../../../shared/api/sessions';
import { parseCastEvent, parseCastHeader, type CastEvent } from '../../../shared/asciicast';
import { api, apiText } from '../api';
import { errorBox, formatBytes, h, replace } from '../dom';
import { formatTime } from '../format';
import type { Cleanup } from '../page';
import { fitToWindow } from './player-fit';
import { batched, clockText, lengthOf, nextAfter, timeline, type ScreenEvent } from './player-timeline';

export async function playerPage(root: HTMLElement, [id]: string[]): Promise<Cleanup> {
  const session = await api<Session>('GET', `/v1/remote-access/sessions/${encodeURIComponent(id!)}`);
  if (!session.recording) {
    replace(root, errorBox(`Session ${id} has no recording.`));
    return () => {};
  }
  const text = await apiText(`/v1/remote-access/sessions/${encodeURIComponent(id!)}/recording`);
  const lines = text.split('\n').filter(Boolean);
  const header = parseCastHeader(lines[0] ?? '');
  const events = timeline(
    lines.slice(1).flatMap((l): CastEvent[] => {
      const event = parseCastEvent(l);
      return event ? [event] : [];
    }),
  );
  const length = lengthOf(events);
  const inner = h('div', { class: 'player-screen' });
  const box = h('div', { class: 'terminal player', id: 'player', tabindex: 0 }, inner);
  const play = h('button', { type: 'button', id: 'play' }, 'Pause');
  const seek = h('input', { type: 'range', id: 'seek', min: 0, max: length, step: 'any', value: 0, 'aria-label': 'Position in the recording' });
  const speed = h(
    'select',
    { id: 'speed', 'aria-label': 'Speed' },
    ...['0.5', '1', '2', '4', '8'].map((v) => h('option', { value: v, selected: v === '1' }, `${v}×`)),
  );
  const clock = h('span', { class: 'muted', id: 'player-clock' });
  const save = h(
    'a',
    { class: 'button', href: URL.createObjectURL(new Blob([text], { type: 'application/x-asciicast' })), download: `${id}.cast` },
    'Download .cast',
  );
  replace(
    root,
    h('h1', {}, 'Recording of ', h('code', {}, id!)),
    h(
      'p',
      { class: 'muted' },
      `${session.opened_by} on ${session.device_id}, ${formatTime(session.opened_at)}, ${Math.round(session.recording.duration_s)} s, ` +
        `${formatBytes(session.recording.bytes)}${session.recording.truncated ? ', truncated' : ''}; pauses over 2 s play as 2 s`,
    ),
    h('div', { class: 'actions player-controls' }, play, seek, clock, speed, save),
    box,
  );
  const size = { cols: header?.width ?? 80, rows: header?.height ?? 24 };
  const term = new Terminal({ ...size, disableStdin: true, fontSize: 13 });
  term.open(inner);
  const fit = fitToWindow(box, inner);
  (window as unknown as { tetherPlayer: Terminal }).tetherPlayer = term; // tests read its buffer

  let at = 0; // the next event
  let position = 0; // seconds on the shortened clock
  let paused = false;
  let timer: ReturnType<typeof setTimeout> | undefined;

  const show = (t: number) => {
    position = t;
    seek.value = String(t);
    replace(clock, `${clockText(t)} / ${clockText(length)}`);
  };
  const apply = (e: ScreenEvent) => {
    if ('write' in e) term.write(e.write);
    else {
      term.resize(e.cols, e.rows);
      fit.refit();
    }
  };
  const stopTimer = () => {
    clearTimeout(timer);
    timer = undefined;
  };
  /** Waits for the next event, at the chosen speed. */
  const schedule = () => {
    stopTimer();
    const next = events[at];
    if (paused) return;
    if (!next) {
      replace(play, 'Replay');
      return;
    }
    timer = setTimeout(step, ((next.at - position) * 1000) / Number(speed.value));
  };
  function step(): void {
    timer = undefined;
    const event = events[at];
    if (!event) return schedule();
    apply(event);
    at++;
    show(event.at);
    schedule();
  }

  /** Shows the screen as it was at `t`: from a blank terminal, everything before `t` at once. */
  function seekTo(t: number): void {
    const target = Math.min(Math.max(t, 0), length);
    term.reset();
    if (term.cols !== size.cols || term.rows !== size.rows) term.resize(size.cols, size.rows);
    at = nextAfter(events, target);
    for (const e of batched(events, at)) apply(e);
    fit.refit();
    show(target);
    if (!paused) replace(play, 'Pause');
    schedule();
  }

  const toggle = () => {
    if (!events[at]) {
      // At the end: from the start again.
      paused = false;
      return seekTo(0);
    }
    paused = !paused;
    replace(play, paused ? 'Play' : 'Pause');
    schedule();
  };
  play.addEventListener('click', toggle);
  seek.addEventListener('input', () => seekTo(Number(seek.value)));
  speed.addEventListener('change', schedule);
  box.addEventListener('keydown', (e) => {
    if (e.key === ' ') {
      e.preventDefault();
      toggle();
    }
  });
  fit.refit();
  show(0);
  schedule();
  return () => {
    stopTimer();
    fit.stop();
    term.dispose();
    URL.revokeObjectURL(save.getAttribute('href')!);
  };
}
