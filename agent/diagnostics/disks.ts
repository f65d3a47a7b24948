/** @module `disk.usage`: every real mounted filesystem with its size, like `df`, via statfs. */
import { readFile, statfs } from 'node:fs/promises';
import type { DiskMount, DiskUsage } from '../../shared/protocol/diagnostics';

// Kernel and virtual filesystems that say nothing about storage.
const PSEUDO = new Set([
  'proc',
  'sysfs',
  'devpts',
  'cgroup',
  'cgroup2',
  'securityfs',
  'debugfs',
  'tracefs',
  'pstore',
  'bpf',
  'mqueue',
  'hugetlbfs',
  'configfs',
  'fusectl',
  'autofs',
  'binfmt_misc',
  'rpc_pipefs',
  'nsfs',
  'efivarfs',
  'selinuxfs',
  'devtmpfs',
  'ramfs',
]);

const unescapeMount = (s: string) => s.replace(/\\(\d{3})/g, (_m, oct: string) => String.fromCharCode(parseInt(oct, 8)));

export async function diskUsage(): Promise<DiskUsage> {
  let mounts: Array<{ device: string; mount: string; fstype: string }>;
  try {
    mounts = (await readFile('/proc/mounts', 'utf8'))
      .split('\n')
      .filter(Boolean)
      .map((line) => {
        const [device = '', mount = '', fstype = ''] = line.split(' ');
        return { device, mount: unescapeMount(mount), fstype };
      })
      .filter((m) => !PSEUDO.has(m.fstype));
  } catch {
    mounts = [{ device: 'root', mount: '/', fstype: 'unknown' }];
  }
  const seen = new Set<string>();
  const result: DiskMount[] = [];
  for (const m of mounts) {
    if (seen.has(m.mount)) continue;
    seen.add(m.mount);
    try {
      const s = await statfs(m.mount);
      const total = s.blocks * s.bsize;
      if (total === 0) continue;
      const free = s.bavail * s.bsize; // what an unprivileged user can still write, as df shows
      result.push({
        mount: m.mount,
        device: m.device,
        fstype: m.fstype,
        total_bytes: total,
        used_bytes: (s.blocks - s.bfree) * s.bsize,
        free_bytes: free,
      });
    } catch {
      // unreachable mount (stale NFS, no permission): leave it out
    }
  }
  return { mounts: result };
}
