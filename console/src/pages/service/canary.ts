/**
 * @module A service's canary on its page: the split of traffic now, a slider that sets the
 * canary's weight when it is let go (`PUT …/canary/weight`: 0 halts it, 100 promotes it), and halt
 * and promote buttons. While the slider is held or a change is on its way, a refresh leaves it
 * where the hand put it.
 */
import type { CanaryState, ServiceDetail } from '../../../../shared/api/services';
import { api } from '../../api';
import { h, replace } from '../../dom';

/** The canary's part of the page; `changed` is called after every change, to read the service again. */
export function canaryControls(path: string, query: string, changed: () => void) {
  const split = h('p', { id: 'canary-split' });
  const slider = h('input', { type: 'range', id: 'canary-weight', min: 0, max: 100, step: 1, 'aria-describedby': 'canary-hint' });
  const value = h('output', { id: 'canary-weight-value', for: 'canary-weight' });
  const halt = h('button', { type: 'button', id: 'canary-halt' }, 'Halt');
  const promote = h('button', { type: 'button', id: 'canary-promote' }, 'Promote');
  const status = h('p', { id: 'canary-status', role: 'status', 'aria-live': 'polite' });
  const controls = h(
    'div',
    { hidden: true },
    h('div', { class: 'actions' }, h('label', { for: 'canary-weight' }, 'Canary weight'), slider, value, halt, promote),
    h('p', { class: 'muted', id: 'canary-hint' }, '0 % halts the canary, 100 % promotes it; promoting takes a canary whose replicas are all ready.'),
  );
  const root = h('div', { id: 'canary', class: 'card' }, split, controls, status);
  let busy = false;

  /** Sends one change and says how it went; the page reads the service again either way. */
  async function send(method: string, suffix: string, body: unknown, said: string): Promise<void> {
    busy = true;
    for (const b of [halt, promote]) b.disabled = true;
    try {
      await api(method, `${path}${suffix}?${query}`, body);
      status.className = 'muted';
      replace(status, said);
    } catch (err) {
      status.className = 'error';
      replace(status, (err as Error).message);
    } finally {
      busy = false;
      changed();
    }
  }

  slider.addEventListener('input', () => replace(value, `${slider.value} %`));
  slider.addEventListener('change', () => {
    const weight = Number(slider.value);
    const said =
      weight === 100
        ? 'Promoted: the canary takes all traffic.'
        : weight === 0
          ? 'Halted: the stable revision takes all traffic.'
          : `The canary takes ${weight} % of traffic.`;
    void send('PUT', '/weight', { weight }, said);
  });
  halt.addEventListener('click', () => void send('POST', '/halt', undefined, 'Halted: the stable revision takes all traffic.'));
  promote.addEventListener('click', () => void send('POST', '/promote', undefined, 'Promoted: the canary takes all traffic.'));

  return {
    root,
    /** Shows the canary state `c` of service `s`. */
    show(c: CanaryState, s: ServiceDetail): void {
      controls.hidden = !c.canary;
      if (!c.canary) return replace(split, `No canary: ${c.stable.revision} takes all traffic. Apply a spec with strategy: canary to start one.`);
      const w = c.canary.weight;
      replace(
        split,
        h('strong', {}, `${w} %`),
        ` of traffic to the canary ${c.canary.revision}, ${c.stable.weight} % to the stable ${c.stable.revision}`,
        w === 0 ? ' (halted)' : '',
        '.',
      );
      if (!busy && !slider.matches(':active')) {
        slider.value = String(w);
        replace(value, `${w} %`);
      }
      const ready = s.status !== 'failed' && s.replicas.ready >= s.replicas.desired;
      halt.disabled = busy || w === 0;
      promote.disabled = busy || !ready;
      promote.title = ready ? '' : `once all its replicas are ready (${s.replicas.ready} of ${s.replicas.desired} now)`;
    },
  };
}
