/** @module Starting the helper processes of `swarm.ts` and reading what they report. */
import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { stopChild } from './lib';

export const SWARM = resolve(__dirname, 'bench-swarm.cjs');

export interface Helper {
  child: ChildProcess;
  /** Resolves with the next JSON line the helper prints. */
  next(): Promise<any>;
  stop(): Promise<void>;
}

/** `onEvent`: lines with an `event` go there as they come, not to `next()`. */
export function helper(args: string[], onEvent?: (msg: any) => void): Helper {
  const child = spawn(process.execPath, [SWARM, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  const lines: any[] = [];
  const waiters: Array<(v: any) => void> = [];
  let partial = '';
  child.stdout!.on('data', (c: Buffer) => {
    const parts = (partial + c.toString()).split('\n');
    partial = parts.pop()!;
    for (const p of parts.filter(Boolean)) {
      const msg = JSON.parse(p);
      if (onEvent && msg.event !== undefined) {
        onEvent(msg);
        continue;
      }
      const w = waiters.shift();
      if (w) w(msg);
      else lines.push(msg);
    }
  });
  return {
    child,
    next: () => (lines.length ? Promise.resolve(lines.shift()) : new Promise((r) => waiters.push(r))),
    stop: () => stopChild(child),
  };
}
