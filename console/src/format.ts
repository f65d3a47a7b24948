/**
 * @module The console's one date format: local time as `YYYY-MM-DD HH:MM:SS`, with the exact
 * ISO instant in the element's title and `datetime`. Every page shows dates through here, so they
 * read and sort the same everywhere (toLocaleString differs by browser and locale).
 */

const pad = (n: number) => String(n).padStart(2, '0');

/** `2026-11-26 19:40:05` in the browser's time zone; the input as given when it is not a date. */
export function formatTime(iso: string): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const date = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
  return `${date} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/** A `<time>` showing `formatTime(iso)`, the ISO instant in its title; "never" without a date. */
export function timeElement(iso: string | null | undefined): HTMLElement {
  if (!iso) {
    const never = document.createElement('span');
    never.className = 'muted';
    never.textContent = 'never';
    return never;
  }
  const el = document.createElement('time');
  el.dateTime = iso;
  el.title = iso;
  el.textContent = formatTime(iso);
  return el;
}
