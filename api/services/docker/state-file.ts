/**
 * @module The runtime's last instructions per environment, kept beside the ingress's files so
 * that a restarted tether serves and repairs every service at once, before the API applies
 * anything again (the API's database stays the source of truth: its next apply replaces an
 * entry). It holds what the runtime was told (images, ports, `config.env`, which secret files
 * to read), never a secret's value. Written whole to a temporary file, then renamed.
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Desired } from './desired';

export type Instruction = { desired: Desired } | { removed: true };

const VERSION = 1;

/** The instructions in `file`; none when it is missing or unreadable (then the replicas found are adopted as they are). */
export function loadInstructions(file: string): Map<string, Instruction> {
  try {
    const parsed = JSON.parse(readFileSync(file, 'utf8')) as { version?: number; services?: Record<string, Instruction> };
    if (parsed.version !== VERSION || !parsed.services || typeof parsed.services !== 'object') return new Map();
    return new Map(Object.entries(parsed.services).filter(([, i]) => i && typeof i === 'object' && ('desired' in i || 'removed' in i)));
  } catch {
    return new Map();
  }
}

export function saveInstructions(file: string, instructions: ReadonlyMap<string, Instruction>): void {
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, `${JSON.stringify({ version: VERSION, services: Object.fromEntries(instructions) })}\n`, { mode: 0o600 });
  renameSync(temporary, file);
}
