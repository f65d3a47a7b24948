/**
 * @module Ends every process of a terminal session, not just the shell: job control puts jobs
 * in process groups of their own, but they all keep the shell's session id (Linux `/proc`).
 */
import { readdirSync, readFileSync } from 'node:fs';

/** Pids whose session id is `sid` (the shell's pid: node-pty makes it a session leader). */
export function sessionMembers(sid: number): number[] {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return [sid];
  }
  const members: number[] = [];
  for (const name of entries) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      // pid (comm) state ppid pgrp session ...; comm may hold spaces and parentheses
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[3]) === sid) members.push(Number(name));
    } catch {
      // the process ended while we looked
    }
  }
  return members;
}

/** Sends `signal` to every process of the session and to its process group. */
export function signalSession(sid: number, signal: NodeJS.Signals): void {
  for (const pid of sessionMembers(sid)) {
    try {
      process.kill(pid, signal);
    } catch {
      // already gone
    }
  }
  try {
    process.kill(-sid, signal);
  } catch {
    // no such group any more
  }
}

/** True while the process exists (a zombie counts until it is reaped). */
export function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
