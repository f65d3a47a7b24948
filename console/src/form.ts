/** @module Form plumbing of the admin pages: a submit that runs one request at a time and shows its failure, and a secret shown once. */
import { copyButton, errorBox, h, replace } from './dom';

/**
 * The `onsubmit` of a form: runs `action` with `submit` disabled until it settles (a second
 * click cannot send the request twice); what it throws is shown in `result` in place of what was there.
 */
export function submitOnce(submit: HTMLButtonElement, result: HTMLElement, action: () => Promise<void>): (e: Event) => void {
  async function run(): Promise<void> {
    submit.disabled = true;
    try {
      await action();
    } catch (err) {
      replace(result, errorBox((err as Error).message));
    } finally {
      submit.disabled = false;
    }
  }
  return function onSubmit(e: Event): void {
    e.preventDefault();
    void run();
  };
}

/** A secret the server shows this once (it keeps only its hash): the text, selectable, with a button that copies it. */
export function secretOnce(id: string, secret: string, label: string): HTMLElement {
  return h('div', { class: 'actions' }, h('code', { id }, secret), copyButton(secret, label));
}
