/** @module Building the page: a small element factory and formatting helpers. */
import { formatTime } from './format';

type Child = Node | string | number | false | null | undefined;
type Attrs = Record<string, string | number | boolean | ((e: Event) => void) | undefined | null>;

/** `h('button', { onclick }, 'Open')`: an element with attributes, listeners and children. */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (typeof value === 'function') el.addEventListener(key.replace(/^on/, ''), value);
    else if (value === true) el.setAttribute(key, '');
    else el.setAttribute(key, String(value));
  }
  append(el, ...children);
  return el;
}

export function append(el: Element, ...children: Child[]): void {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

export function replace(el: Element, ...children: Child[]): void {
  el.replaceChildren();
  append(el, ...children);
}

const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
export function formatBytes(n: number): string {
  let v = n;
  let u = 0;
  while (v >= 1024 && u < UNITS.length - 1) {
    v /= 1024;
    u++;
  }
  return u === 0 ? `${v} B` : `${v.toFixed(v >= 100 ? 0 : 1)} ${UNITS[u]}`;
}

/** "3 min ago", "just now", or the date (the console's one format) for old ones. */
export function timeAgo(iso: string | null | undefined): string {
  if (!iso) return 'never';
  const s = Math.round((Date.now() - Date.parse(iso)) / 1000);
  if (s < 10) return 'just now';
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return formatTime(iso);
}

/** A message that says what went wrong, in a live region. */
export function errorBox(message: string): HTMLElement {
  return h('p', { class: 'error', role: 'alert' }, message);
}

/** A table of rows; `columns` maps a heading to each row's cell. */
export function table<T>(rows: T[], columns: Record<string, (row: T) => Child>, empty: string): HTMLElement {
  if (rows.length === 0) return h('p', { class: 'muted' }, empty);
  const head = h('tr', {}, ...Object.keys(columns).map((c) => h('th', { scope: 'col' }, c)));
  const body = rows.map((r) => h('tr', {}, ...Object.values(columns).map((cell) => h('td', {}, cell(r)))));
  return h('div', { class: 'scroll' }, h('table', {}, h('thead', {}, head), h('tbody', {}, ...body)));
}

/** A button that copies `text` to the clipboard and says so. */
export function copyButton(text: string, label = 'Copy'): HTMLButtonElement {
  const button = h('button', { type: 'button' }, label);
  button.addEventListener('click', () => {
    // The clipboard needs a secure context (https or loopback); elsewhere the text stays selectable.
    void navigator.clipboard?.writeText(text).then(
      () => replace(button, 'Copied'),
      () => replace(button, 'Select and copy it'),
    );
  });
  return button;
}

/**
 * Asks in the page (not a modal dialog, so the question sits beside what it concerns):
 * resolves true on `action`, false on Cancel. The question is removed once answered.
 */
export function confirmInline(where: HTMLElement, question: string, action: string): Promise<boolean> {
  return new Promise((resolve) => {
    const answer = (yes: boolean) => {
      box.remove();
      resolve(yes);
    };
    const yes = h('button', { type: 'button', class: 'danger', 'data-confirm': 'yes', onclick: () => answer(true) }, action);
    const box = h(
      'div',
      { class: 'card confirm', role: 'alertdialog', 'aria-label': question },
      h('p', {}, question),
      h('div', { class: 'actions' }, yes, h('button', { type: 'button', 'data-confirm': 'no', onclick: () => answer(false) }, 'Cancel')),
    );
    where.replaceChildren(box);
    yes.focus();
  });
}
