/**
 * @module A minimal Prometheus registry: labelled counters and gauges read at scrape time,
 * rendered in the text exposition format 0.0.4.
 */

type Labels = Record<string, string>;

export interface Counter {
  inc(labels?: Labels, by?: number): void;
  /** The series of one label set, resolved once: for counters bumped on hot paths. */
  series(labels: Labels): { inc(by?: number): void };
}

interface Family {
  name: string;
  help: string;
  type: 'counter' | 'gauge';
  samples(): Array<[Labels, number]> | Promise<Array<[Labels, number]>>;
}

export interface Metrics {
  counter(name: string, help: string): Counter;
  /** A gauge whose value is read from `read` at each scrape (a database count, say, asynchronously). */
  gauge(name: string, help: string, read: () => number | Promise<number>): void;
  /** The whole registry in Prometheus text format. */
  render(): Promise<string>;
}

const escapeLabel = (v: string): string => v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');

function renderLabels(labels: Labels): string {
  const keys = Object.keys(labels);
  if (keys.length === 0) return '';
  return `{${keys.map((k) => `${k}="${escapeLabel(labels[k]!)}"`).join(',')}}`;
}

export function createMetrics(): Metrics {
  const families = new Map<string, Family>();

  function register(family: Family): void {
    if (families.has(family.name)) throw new Error(`metric ${family.name} registered twice`);
    families.set(family.name, family);
  }

  return {
    counter(name, help) {
      const values = new Map<string, [Labels, number]>();
      register({ name, help, type: 'counter', samples: () => [...values.values()] });
      const entryOf = (labels: Labels): [Labels, number] => {
        const key = renderLabels(labels);
        let entry = values.get(key);
        if (!entry) values.set(key, (entry = [labels, 0]));
        return entry;
      };
      return {
        inc(labels = {}, by = 1) {
          entryOf(labels)[1] += by;
        },
        series(labels) {
          const entry = entryOf(labels);
          return {
            inc(by = 1) {
              entry[1] += by;
            },
          };
        },
      };
    },
    gauge(name, help, read) {
      register({ name, help, type: 'gauge', samples: async () => [[{}, await read()]] });
    },
    async render() {
      const lines: string[] = [];
      for (const f of families.values()) {
        lines.push(`# HELP ${f.name} ${f.help}`, `# TYPE ${f.name} ${f.type}`);
        for (const [labels, value] of await f.samples()) lines.push(`${f.name}${renderLabels(labels)} ${value}`);
      }
      return `${lines.join('\n')}\n`;
    },
  };
}
