/** @module `network.interfaces`: addresses from the OS, byte counters from `/sys/class/net`. */
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import type { NetworkInterface, NetworkInterfaces } from '../../shared/protocol/diagnostics';

async function counter(iface: string, name: string): Promise<number | null> {
  try {
    return Number((await readFile(`/sys/class/net/${iface}/statistics/${name}`, 'utf8')).trim());
  } catch {
    return null;
  }
}

export async function networkInterfaces(): Promise<NetworkInterfaces> {
  const result: NetworkInterface[] = [];
  for (const [name, addrs] of Object.entries(os.networkInterfaces())) {
    const list = addrs ?? [];
    result.push({
      name,
      mac: list[0]?.mac ?? null,
      addresses: list.map((a) => ({ address: a.address, family: a.family, netmask: a.netmask, cidr: a.cidr, internal: a.internal })),
      rx_bytes: await counter(name, 'rx_bytes'),
      tx_bytes: await counter(name, 'tx_bytes'),
    });
  }
  return { interfaces: result };
}
