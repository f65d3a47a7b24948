/**
 * @module A question with a reason, asked in the page beside what it concerns (as confirmInline
 * does): approving, denying or revoking a request is recorded with why, so the answer is a text.
 */
import type { ACCESS_LIMITS } from '../../../../shared/api/access';
import { h } from '../../dom';

/** The longest reason the API takes (a type check keeps it equal; the bundle takes nothing from shared/ at run time). */
export const REASON_MAX: (typeof ACCESS_LIMITS)['reasonChars']['max'] = 500;

/**
 * Asks `question` in `where` with a reason field: resolves the reason (trimmed) on `action`, null
 * on Cancel. With `required`, the button does nothing until a reason is written (the form says so);
 * `danger` marks an action that takes something away (deny, revoke).
 */
export function askReason(
  where: HTMLElement,
  question: string,
  action: string,
  { required, danger = false }: { required: boolean; danger?: boolean },
): Promise<string | null> {
  return new Promise((resolve) => {
    const reason = h('textarea', {
      id: 'access-reason',
      rows: 2,
      maxlength: REASON_MAX,
      required,
      placeholder: required ? 'Why (required, recorded in the audit)' : 'Why (optional, recorded in the audit)',
    });
    const answer = (value: string | null) => {
      form.remove();
      resolve(value);
    };
    const form = h(
      'form',
      {
        class: danger ? 'card confirm' : 'card',
        role: 'alertdialog',
        'aria-label': question,
        id: 'access-question',
        onsubmit: (e: Event) => {
          e.preventDefault();
          const text = reason.value.trim();
          if (required && text === '') return void reason.reportValidity();
          answer(text);
        },
      },
      h('label', { for: 'access-reason' }, question),
      reason,
      h(
        'div',
        { class: 'actions' },
        h('button', { type: 'submit', class: danger ? 'danger' : undefined, 'data-confirm': 'yes' }, action),
        h('button', { type: 'button', 'data-confirm': 'no', onclick: () => answer(null) }, 'Cancel'),
      ),
    );
    where.replaceChildren(form);
    reason.focus();
  });
}
