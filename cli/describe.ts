/** @module One record for people: its fields as aligned `name  value` lines, empty ones left out. */

/** `name  value` lines, values aligned; `undefined` values are skipped, `null` shows as `-`. */
export function describe(fields: Array<[string, string | number | null | undefined]>): string {
  const shown = fields.filter(([, v]) => v !== undefined);
  const width = Math.max(...shown.map(([k]) => k.length));
  return shown.map(([k, v]) => `${k.padEnd(width)}  ${v ?? '-'}\n`).join('');
}
