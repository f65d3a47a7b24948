/**
 * @module Password hashing with scrypt (N=2^14, r=8, p=1; OWASP's minimum for scrypt), stored as
 * `scrypt$N$r$p$salt$hash`. Verification takes the same time whether or not the user exists.
 * Every hash of the process passes one gate (./hash-gate): at most `HASH_SLOTS` run at once.
 */
import { randomBytes, scrypt as scryptCb, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { createHashGate } from './hash-gate';

const N = 16384;
const R = 8;
const P = 1;
const KEY_LEN = 32;

/**
 * Hashes running at once: two per core, but at most 3, so that one of libuv's 4 worker threads
 * (where scrypt runs, with file and DNS work) stays free for the rest of the server.
 */
export const HASH_SLOTS = Math.min(2 * availableParallelism(), 3);
/** Hashes waiting for a slot (about a second of work); more are refused with 429. */
export const HASH_QUEUE = 8 * HASH_SLOTS;
const gate = createHashGate(HASH_SLOTS, HASH_QUEUE);

function scrypt(password: string, salt: Buffer, keyLen: number, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scryptCb(password, salt, keyLen, options, (err, key) => (err ? reject(err) : resolve(key)));
  });
}

/** A new salted hash of `password`; 429 when the server is checking too many passwords already. */
export const hashPassword = (password: string): Promise<string> => gate.run(() => hashNow(password));

async function hashNow(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await scrypt(password, salt, KEY_LEN, { N, r: R, p: P });
  return `scrypt$${N}$${R}$${P}$${salt.toString('base64')}$${key.toString('base64')}`;
}

// Hashed once, lazily: verified against when the user is unknown so timing does not tell.
let dummy: Promise<string> | undefined;

/**
 * True when `password` matches `stored`; with no stored hash it still spends the same time. 429
 * when the server is checking too many passwords already.
 */
export const verifyPassword = (password: string, stored: string | null | undefined): Promise<boolean> => gate.run(() => verifyNow(password, stored));

async function verifyNow(password: string, stored: string | null | undefined): Promise<boolean> {
  // Within the caller's slot: through the gate it could wait for a slot its caller holds.
  const target = stored ?? (await (dummy ??= hashNow('tether-dummy-password')));
  const [scheme, n, r, p, saltB64, keyB64] = target.split('$');
  if (scheme !== 'scrypt' || !saltB64 || !keyB64) return false;
  const expected = Buffer.from(keyB64, 'base64');
  const actual = await scrypt(password, Buffer.from(saltB64, 'base64'), expected.length, {
    N: Number(n),
    r: Number(r),
    p: Number(p),
  });
  return timingSafeEqual(actual, expected) && stored != null;
}
