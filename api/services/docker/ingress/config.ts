/**
 * @module The HAProxy configuration of an environment's ingress, written once at start: one
 * frontend that maps the first label of the `Host` header to a backend slot through a map file
 * the runtime API edits, answers 404 for hosts it does not know, and a fixed pool of empty
 * round-robin backends (slots) whose servers come and go through the runtime API. HAProxy
 * cannot create backends at run time, hence the pool.
 */
import { isIP } from 'node:net';
import { join } from 'node:path';
import { IngressError } from './errors';

/** Backend slots per environment unless told otherwise: one service per slot. */
export const DEFAULT_SLOTS = 128;
/** The most slots a configuration may declare. */
export const MAX_SLOTS = 1000;

/** The files of an ingress in its run directory. */
export function runFiles(runDir: string) {
  return {
    config: join(runDir, 'haproxy.cfg'),
    pid: join(runDir, 'haproxy.pid'),
    socket: join(runDir, 'admin.sock'),
    hosts: join(runDir, 'hosts.map'),
    /** What tether started: environment, address, slot count (ingress.ts). */
    state: join(runDir, 'ingress.json'),
  };
}

export type RunFiles = ReturnType<typeof runFiles>;

/** `slot007`: the backend of slot 7. */
export function slotName(index: number): string {
  return `slot${String(index).padStart(3, '0')}`;
}

const SLOT_NAME = /^slot(\d{3})$/;

/** The index of a backend named like a slot, or undefined. */
export function slotIndex(name: string): number | undefined {
  const m = SLOT_NAME.exec(name);
  return m ? Number(m[1]) : undefined;
}

export interface ListenAddress {
  host: string;
  /** 0: pick a free one. */
  port: number;
}

/** `host:port`, `[v6]:port`; the port may be 0. */
export function parseListen(listen: string): ListenAddress {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]\s]+)):(\d{1,5})$/.exec(listen);
  const host = m?.[1] ?? m?.[2];
  const port = Number(m?.[3]);
  if (!host || !(port >= 0 && port <= 65535)) throw new IngressError('invalid_options', `ingress address ${JSON.stringify(listen)} is not host:port`);
  if (m?.[1] && isIP(host) !== 6) throw new IngressError('invalid_options', `ingress address ${JSON.stringify(listen)} has no IPv6 address in its brackets`);
  return { host, port };
}

/** `host:port` again, IPv6 in brackets. */
export function formatAddress(host: string, port: number): string {
  return isIP(host) === 6 ? `[${host}]:${port}` : `${host}:${port}`;
}

export interface ConfigOptions {
  environment: string;
  address: ListenAddress;
  slots: number;
  files: RunFiles;
}

/** HAProxy's `description`: how an adopting tether knows the environment of a running HAProxy. */
export function description(environment: string): string {
  return `tether ingress ${environment}`;
}

/** The configuration text. Paths must be free of spaces and quotes (checked by the caller). */
export function haproxyConfig({ environment, address, slots, files }: ConfigOptions): string {
  const backends = Array.from({ length: slots }, (_, i) => `backend ${slotName(i)}\n  balance roundrobin\n`);
  return `# Written by tether for the ${environment} ingress; changed at run time through ${files.socket} only.
global
  description ${description(environment)}
  stats socket ${files.socket} mode 600 level admin
  stats timeout 30s

defaults
  mode http
  option forwardfor
  # A server that refuses a connection (a replica that just went away) gets the request retried elsewhere.
  retries 3
  option redispatch 1
  timeout connect 5s
  timeout client 60s
  timeout server 60s
  timeout http-request 10s
  timeout http-keep-alive 10s
  timeout queue 10s
  timeout tunnel 1h

frontend ingress
  bind ${formatAddress(address.host, address.port)}
  # NAME and NAME.anything: a service name is one DNS label, so the first label of the host (without its port) is the key.
  http-request set-var(txn.slot) req.hdr(host),field(1,:),lower,field(1,.),map(${files.hosts})
  http-request return status 404 content-type text/plain string "no service here: unknown Host\\n" unless { var(txn.slot) -m found }
  use_backend %[var(txn.slot)]

${backends.join('\n')}`;
}
