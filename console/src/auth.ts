/**
 * @module Who is signed in. The token lives in sessionStorage (this tab only, gone with it), never
 * in a URL. A token the console obtained with a password is revoked when you sign out; a pasted
 * one (the bootstrap administrator's, say) is only forgotten.
 */
import type { Me } from '../../shared/api/identity';

const KEY = 'tether.token';
const OWN = 'tether.token.obtained';

export const token = (): string | null => sessionStorage.getItem(KEY);

export function remember(t: string, obtainedHere: boolean): void {
  sessionStorage.setItem(KEY, t);
  if (obtainedHere) sessionStorage.setItem(OWN, '1');
  else sessionStorage.removeItem(OWN);
}

/** Forgets the token; says whether the console obtained it (and should revoke it). */
export function forget(): { token: string | null; obtainedHere: boolean } {
  const t = token();
  const obtainedHere = sessionStorage.getItem(OWN) === '1';
  sessionStorage.removeItem(KEY);
  sessionStorage.removeItem(OWN);
  return { token: t, obtainedHere };
}

let me: Me | undefined;

/** Who is signed in (`GET /v1/me`), once the console has asked; pages show only what it may do. */
export const currentUser = (): Me | undefined => me;
export const setCurrentUser = (m: Me | undefined) => void (me = m);
