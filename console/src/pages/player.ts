/**
 * @module A session's recording played in xterm.js at its own pace: play and pause (space),
 * speed, and long pauses shortened; the cast can also be downloaded for asciinema or an auditor.
 */
import { Terminal } from '@xterm/xterm';
import type { Session } from '../../../shared/api/sessions';
import { parseCastEvent, parseCastHeader, type CastEvent } from '../../../shared/asciicast';
import { api, apiText } from '../api';
import { errorBox, formatBytes, h, replace } from '../dom';
import type { Cleanup } from '../page';

export async function playerPage(root: HTMLElement, [id]: string[]): Promise<Cleanup> {
  const session = await api<Session>('GET', `/v1/remote-access/sessions/${encodeURIComponent(id!)}`);
  if (!session.recording) {
    replace(root, errorBox(`Session ${id} has no recording.`));
    return () => {};
  }
  const text = await apiText(`/v1/remote-access/sessions/${encodeURIComponent(id!)}/recording`);
  const lines = text.split('\n').filter(Boolean);
  const header = parseCastHeader(lines[0] ?? '');
  const events = lines.slice(1).flatMap((l): CastEvent[] => {
    const event = parseCastEvent(l);
    return event ? [event] : [];
  });
  const box = h('div', { class: 'terminal player', id: 'player' });
  const play = h('button', { type: 'button', id: 'play' }, 'Pause');
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
      `${session.opened_by} on ${session.device_id}, ${Math.round(session.recording.duration_s)} s, ${formatBytes(session.recording.bytes)}${session.recording.truncated ? ', truncated' : ''}`,
    ),
    h('div', { class: 'actions' }, play, speed, clock, save),
    box,
  );
  const term = new Terminal({ cols: header?.width ?? 80, rows: header?.height ?? 24, disableStdin: true, fontSize: 13 });
  term.open(box);

  let at = 0; // the next event
  let paused = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const IDLE = 2; // pauses longer than this play as this long

  function step(): void {
    timer = undefined;
    if (paused) return;
    const event = events[at];
    if (!event) {
      replace(play, 'Replay');
      return;
    }
    const [t, code, data] = event;
    if (code === 'o') term.write(data);
    if (code === 'r') {
      const [cols, rows] = data.split('x').map(Number);
      if (cols && rows) term.resize(cols, rows);
    }
    at++;
    replace(clock, `${Math.floor(t)} s`);
    const next = events[at];
    if (next) timer = setTimeout(step, (Math.min(next[0] - t, IDLE) * 1000) / Number(speed.value));
    else step();
  }
  const toggle = () => {
    if (!events[at]) {
      // At the end: from the start again.
      at = 0;
      term.reset();
      paused = false;
      replace(play, 'Pause');
      return step();
    }
    paused = !paused;
    replace(play, paused ? 'Play' : 'Pause');
    if (paused) {
      clearTimeout(timer);
      timer = undefined;
    } else step();
  };
  play.addEventListener('click', toggle);
  box.addEventListener('keydown', (e) => {
    if (e.key === ' ') {
      e.preventDefault();
      toggle();
    }
  });
  box.tabIndex = 0;
  step();
  return () => {
    clearTimeout(timer);
    term.dispose();
    URL.revokeObjectURL(save.getAttribute('href')!);
  };
}
