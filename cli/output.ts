/** @module Output for people (aligned tables, sizes) and for scripts (`--json`: the response data). */

export interface Out {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
}

export const processOut: Out = {
  stdout: (t) => process.stdout.write(t),
  stderr: (t) => process.stderr.write(t),
};

export function printJson(out: Out, data: unknown): void {
  out.stdout(`${JSON.stringify(data, null, 2)}\n`);
}

/** Columns aligned to their widest cell; headers upper-cased. */
export function table(rows: Array<Record<string, string | number | null | undefined>>, columns: string[]): string {
  const cells = rows.map((r) => columns.map((c) => String(r[c] ?? '-')));
  const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((row) => row[i]!.length)));
  const line = (values: string[]) => values.map((v, i) => (i === values.length - 1 ? v : v.padEnd(widths[i]!))).join('  ');
  return `${[line(columns.map((c) => c.toUpperCase())), ...cells.map(line)].join('\n')}\n`;
}

const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];

export function formatBytes(n: number): string {
  let value = n;
  let unit = 0;
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(value >= 100 ? 0 : 1)} ${UNITS[unit]}`;
}

export function formatDuration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}
