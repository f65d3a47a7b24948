/**
 * @module `process.list`: processes from `/proc`, heaviest CPU users first. `cpu` is the percent
 * of one CPU the process used over a short sample; `rss` is resident memory in bytes.
 */
import { readdir, readFile } from 'node:fs/promises';
import type { ProcessList, ProcessRow } from '../../shared/protocol/diagnostics';

const PAGE_SIZE = 4096;
const CLOCK_TICKS = 100; // USER_HZ: 100 on every Linux ABI Node supports

interface Sample {
  pid: number;
  ppid: number;
  uid: number;
  ticks: number;
  rssPages: number;
  command: string;
}

async function usersById(): Promise<Map<number, string>> {
  const users = new Map<number, string>();
  try {
    for (const line of (await readFile('/etc/passwd', 'utf8')).split('\n')) {
      const [name, , uid] = line.split(':');
      if (name && uid) users.set(Number(uid), name);
    }
  } catch {
    // no passwd: numeric uids
  }
  return users;
}

async function sample(): Promise<Map<number, Sample>> {
  const out = new Map<number, Sample>();
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const [stat, status, cmdline] = await Promise.all([
        readFile(`/proc/${name}/stat`, 'utf8'),
        readFile(`/proc/${name}/status`, 'utf8'),
        readFile(`/proc/${name}/cmdline`, 'utf8'),
      ]);
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      // f[0] state, f[1] ppid, f[11] utime, f[12] stime, f[21] rss (pages)
      out.set(Number(name), {
        pid: Number(name),
        ppid: Number(f[1]),
        uid: Number(/^Uid:\s+(\d+)/m.exec(status)?.[1] ?? -1),
        ticks: Number(f[11]) + Number(f[12]),
        rssPages: Number(f[21]),
        command: cmdline.replace(/\0+$/, '').replace(/\0/g, ' ') || `[${comm}]`,
      });
    } catch {
      // the process ended while we read it
    }
  }
  return out;
}

export async function processList(limit: number, sampleMs = 200): Promise<ProcessList> {
  const users = await usersById();
  const first = await sample();
  await new Promise((r) => setTimeout(r, sampleMs));
  const second = await sample();
  const seconds = sampleMs / 1000;
  const rows = [...second.values()].map((p): ProcessRow => {
    const before = first.get(p.pid)?.ticks ?? p.ticks;
    return {
      pid: p.pid,
      ppid: p.ppid,
      user: users.get(p.uid) ?? String(p.uid),
      cpu: Math.round(((p.ticks - before) / CLOCK_TICKS / seconds) * 1000) / 10,
      rss: p.rssPages * PAGE_SIZE,
      command: p.command.slice(0, 4096),
    };
  });
  rows.sort((a, b) => b.cpu - a.cpu || b.rss - a.rss);
  return { total: rows.length, processes: rows.slice(0, limit) };
}
