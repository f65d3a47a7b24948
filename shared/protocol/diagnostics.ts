/**
 * @module The ops of the `diagnostics` protocol and what a device answers to each (the `result` of
 * `{id, ok: true, result}`; requests and errors are in `session-stream.ts`). The agent's ops
 * return these types, the CLI prints them and the console `import type`s them, so a field changed
 * here reaches every side at `tsc`. Types and names only, no `node:` imports: the console's bundle
 * takes nothing from it.
 */

/** Every diagnostics op, in the order the docs list them. */
export const DIAGNOSTIC_OP_NAMES = ['system.info', 'system.metrics', 'disk.usage', 'network.interfaces', 'process.list', 'log.tail'] as const;
export type DiagnosticOp = (typeof DIAGNOSTIC_OP_NAMES)[number];

/** `system.info`: what the device is. */
export interface SystemInfo {
  hostname: string;
  /** The distribution's pretty name (`/etc/os-release`), else the kernel's type and release. */
  os: string;
  kernel: string;
  arch: string;
  uptime_s: number;
  cpus: { count: number; model: string };
  agent_version: string;
}

/** `system.metrics`: load and memory now; `cpu_percent` is sampled over a fifth of a second. */
export interface SystemMetrics {
  loadavg: number[];
  cpu_percent: number;
  mem_total_bytes: number;
  mem_used_bytes: number;
  /** Available memory (`MemAvailable`), not only the unused pages. */
  mem_free_bytes: number;
}

/** One real mounted filesystem, as `df` shows it. */
export interface DiskMount {
  mount: string;
  device: string;
  fstype: string;
  total_bytes: number;
  used_bytes: number;
  /** What an unprivileged user can still write. */
  free_bytes: number;
}

/** `disk.usage`. */
export interface DiskUsage {
  mounts: DiskMount[];
}

export interface InterfaceAddress {
  address: string;
  family: 'IPv4' | 'IPv6';
  netmask: string;
  cidr: string | null;
  internal: boolean;
}

export interface NetworkInterface {
  name: string;
  mac: string | null;
  addresses: InterfaceAddress[];
  /** Byte counters; null where the OS does not give them. */
  rx_bytes: number | null;
  tx_bytes: number | null;
}

/** `network.interfaces`. */
export interface NetworkInterfaces {
  interfaces: NetworkInterface[];
}

/** One process: `cpu` in percent of one CPU over a short sample, `rss` resident memory in bytes. */
export interface ProcessRow {
  pid: number;
  ppid: number;
  user: string;
  cpu: number;
  rss: number;
  command: string;
}

/** `process.list {limit}`: the `limit` heaviest CPU users of `total` processes. */
export interface ProcessList {
  total: number;
  processes: ProcessRow[];
}

/** `log.tail {path, lines}`: the newest lines that fit in one reply. */
export interface LogTail {
  path: string;
  lines: string[];
  /** True when lines asked for were left out (or the oldest one kept was cut) to fit the cap. */
  truncated: boolean;
}

/** The result of each op. */
export interface DiagnosticResults {
  'system.info': SystemInfo;
  'system.metrics': SystemMetrics;
  'disk.usage': DiskUsage;
  'network.interfaces': NetworkInterfaces;
  'process.list': ProcessList;
  'log.tail': LogTail;
}
