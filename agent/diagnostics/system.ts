/** @module `system.info` and `system.metrics`: identity and load of the device, read-only. */
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import type { SystemInfo, SystemMetrics } from '../../shared/protocol/diagnostics';
import { TETHER_VERSION } from '../../shared/version';

async function osName(): Promise<string> {
  try {
    const text = await readFile('/etc/os-release', 'utf8');
    const pretty = /^PRETTY_NAME="?([^"\n]*)"?$/m.exec(text)?.[1];
    if (pretty) return pretty;
  } catch {
    // not Linux, or no os-release
  }
  return `${os.type()} ${os.release()}`;
}

export async function systemInfo(): Promise<SystemInfo> {
  const cpus = os.cpus();
  return {
    hostname: os.hostname(),
    os: await osName(),
    kernel: `${os.type()} ${os.release()}`,
    arch: os.arch(),
    uptime_s: Math.round(os.uptime()),
    cpus: { count: cpus.length, model: cpus[0]?.model.trim() ?? 'unknown' },
    agent_version: TETHER_VERSION,
  };
}

function cpuTimes() {
  let idle = 0;
  let total = 0;
  for (const cpu of os.cpus()) {
    const t = cpu.times;
    idle += t.idle;
    total += t.user + t.nice + t.sys + t.idle + t.irq;
  }
  return { idle, total };
}

async function memory() {
  // MemAvailable is what a user means by free memory; os.freemem() is MemFree on Linux.
  try {
    const text = await readFile('/proc/meminfo', 'utf8');
    const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN) * 1024;
    const total = kb('MemTotal');
    const free = kb('MemAvailable');
    if (Number.isFinite(total) && Number.isFinite(free)) return { total, free, used: total - free };
  } catch {
    // not Linux
  }
  const total = os.totalmem();
  const free = os.freemem();
  return { total, free, used: total - free };
}

/** Load averages, CPU use sampled over `sampleMs`, and memory. */
export async function systemMetrics(sampleMs = 200): Promise<SystemMetrics> {
  const a = cpuTimes();
  await new Promise((r) => setTimeout(r, sampleMs));
  const b = cpuTimes();
  const totalDelta = b.total - a.total;
  const busy = totalDelta > 0 ? 1 - (b.idle - a.idle) / totalDelta : 0;
  const mem = await memory();
  return {
    loadavg: os.loadavg().map((l) => Math.round(l * 100) / 100),
    cpu_percent: Math.round(busy * 1000) / 10,
    mem_total_bytes: mem.total,
    mem_used_bytes: mem.used,
    mem_free_bytes: mem.free,
  };
}
