/** @module Starting the helper processes of `swarm.ts` and reading what they report. */
import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { stopChild } from './lib';

export const SWARM = resolve(__dirname, 'bench-swarm.cjs');

// What the helpers print, one JSON line each; which one comes depends on the mode started.
/** The `tcp-…` servers: where they listen. */
export interface Listening {
  port: number;
}
/** `tcp-relay` and `bench/splice-relay.c`: their ports, one per target, in the targets' order. */
export interface RelayListening {
  ports: number[];
}
/** `sink` once all has arrived, `tcp-up` and `tcp-down`: the transfer took `seconds`. */
export interface Transferred {
  seconds: number;
}
/** `agents`: how many connected, how many could not. */
export interface AgentsConnected {
  open: number;
  failed: number;
}
/** A line with an `event` (`agents`, `real-agents`): sent to `onEvent`, never to `next()`. */
export interface HelperEvent {
  event: 'reconnected' | 'dropped' | 'all-connected';
  device?: string;
  at?: number;
}

export interface Helper {
  child: ChildProcess;
  /** Resolves with the next JSON line the helper prints: `T`, what its mode reports (not checked). */
  next<T = unknown>(): Promise<T>;
  stop(): Promise<void>;
}

/** Starts a helper, waits for its one report, stops it. */
export async function helperResult<T>(args: string[]): Promise<T> {
  const h = helper(args);
  try {
    return await h.next<T>();
  } finally {
    await h.stop();
  }
}

export function helper(args: string[], onEvent?: (msg: HelperEvent) => void): Helper {
  const child = spawn(process.execPath, [SWARM, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  const lines: unknown[] = [];
  const waiters: Array<(v: unknown) => void> = [];
  let partial = '';
  child.stdout!.on('data', (c: Buffer) => {
    const parts = (partial + c.toString()).split('\n');
    partial = parts.pop()!;
    for (const p of parts.filter(Boolean)) {
      const msg = JSON.parse(p) as Partial<HelperEvent>;
      if (onEvent && msg.event !== undefined) {
        onEvent(msg as HelperEvent);
        continue;
      }
      const w = waiters.shift();
      if (w) w(msg);
      else lines.push(msg);
    }
  });
  return {
    child,
    next: <T>() => (lines.length ? Promise.resolve(lines.shift() as T) : new Promise<T>((r) => waiters.push(r as (v: unknown) => void))),
    stop: () => stopChild(child),
  };
}
