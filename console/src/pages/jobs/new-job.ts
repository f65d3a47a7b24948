/**
 * @module Starting a diagnostics job from the console (the kind every role of the page may start):
 * devices by id or by labels, an op, and the pace. The job's page opens once it is created;
 * commands and file pushes are for the CLI (`tether job run|push`).
 */
import type { CreateJobBody, Job } from '../../../../shared/api/jobs';
import type { DiagnosticOp } from '../../../../shared/protocol/diagnostics';
import { api } from '../../api';
import { h } from '../../dom';
import { submitOnce } from '../../form';
import { parseTarget } from './words';

/** Every diagnostics op, in the docs' order (a type check keeps it whole; the bundle takes nothing from shared/protocol). */
const OPS = Object.keys({
  'system.info': true,
  'system.metrics': true,
  'disk.usage': true,
  'network.interfaces': true,
  'process.list': true,
  'log.tail': true,
} satisfies Record<DiagnosticOp, true>) as DiagnosticOp[];

/** A number field's value, or undefined when empty so the server's default applies. */
const numberOf = (input: HTMLInputElement) => (input.value.trim() === '' ? undefined : Number(input.value));

export function newJobForm(): HTMLElement {
  const target = h('input', { id: 'new-job-target', required: true, autocomplete: 'off', placeholder: 'van-1 van-2, or fleet=north role=van' });
  const op = h('select', { id: 'new-job-op' }, ...OPS.map((o) => h('option', { value: o }, o)));
  const perMinute = h('input', { id: 'new-job-per-minute', type: 'number', min: 1, max: 1000, placeholder: '60' });
  const inFlight = h('input', { id: 'new-job-in-flight', type: 'number', min: 1, max: 1000, placeholder: '10' });
  const submit = h('button', { type: 'submit' }, 'Start job');
  const result = h('div', { id: 'new-job-result', 'aria-live': 'polite' });

  async function start(): Promise<void> {
    const body: CreateJobBody = {
      kind: 'diagnostics',
      target: parseTarget(target.value),
      op: op.value as DiagnosticOp,
      max_per_minute: numberOf(perMinute),
      max_in_flight: numberOf(inFlight),
    };
    const job = await api<Job>('POST', '/v1/jobs', body);
    location.hash = `#/jobs/${encodeURIComponent(job.job_id)}`;
  }

  return h(
    'details',
    { class: 'new-job' },
    h('summary', {}, 'New diagnostics job'),
    h(
      'form',
      { class: 'card', id: 'new-job-form', onsubmit: submitOnce(submit, result, start) },
      h('label', { for: 'new-job-target' }, 'Devices (ids, or key=value labels)'),
      target,
      h('label', { for: 'new-job-op' }, 'Op'),
      op,
      h('label', { for: 'new-job-per-minute' }, 'Started per minute at most (an even pace)'),
      perMinute,
      h('label', { for: 'new-job-in-flight' }, 'Running at once at most'),
      inFlight,
      h('div', { class: 'actions' }, submit),
    ),
    result,
  );
}
