/**
 * @module The tether web console: a single page, routed by the URL's hash (`#/devices`,
 * `#/devices/ID`, `#/terminal/ID`, `#/files/ID`, `#/services`, `#/services/ENV/NAME`,
 * `#/sessions`, `#/sessions/ID/play`, `#/audit`).
 * Each page renders into `#app` and returns what ends it (a stream, a session, a subscription)
 * when you leave it.
 */
import '@xterm/xterm/css/xterm.css';
import './styles.css';
import type { Me } from '../../shared/api/identity';
import { api, ApiError, whenUnauthorized } from './api';
import { forget, token } from './auth';
import type { Cleanup, Page } from './page';
import { append, h, replace } from './dom';
import { startLive, stopLive } from './events';
import { auditPage } from './pages/audit';
import { devicePage } from './pages/device';
import { devicesPage } from './pages/devices';
import { filesPage } from './pages/files';
import { loginPage } from './pages/login';
import { playerPage } from './pages/player';
import { servicePage } from './pages/service';
import { servicesPage } from './pages/services';
import { sessionsPage } from './pages/sessions';
import { terminalPage } from './pages/terminal';

const ROUTES: Array<[RegExp, Page]> = [
  [/^\/devices$/, devicesPage],
  [/^\/devices\/([^/]+)$/, devicePage],
  [/^\/terminal\/([^/]+)$/, terminalPage],
  [/^\/files\/([^/]+)$/, filesPage],
  [/^\/services$/, servicesPage],
  [/^\/services\/([^/]+)\/([^/]+)$/, servicePage],
  [/^\/sessions$/, sessionsPage],
  [/^\/sessions\/([^/]+)\/play$/, playerPage],
  [/^\/audit$/, auditPage],
];

const app = document.getElementById('app')!;
const nav = document.getElementById('nav')!;
const who = document.getElementById('who')!;
let me: Me | undefined;
let cleanup: Cleanup | undefined;

export const currentUser = (): Me | undefined => me;

async function signOut(): Promise<void> {
  const { token: t, obtainedHere } = forget();
  // A token this console obtained is revoked; a pasted one is only forgotten here.
  if (t && obtainedHere && me) {
    await fetch(`/v1/tokens/${encodeURIComponent(me.token_id)}`, { method: 'DELETE', headers: { authorization: `Bearer ${t}` } }).catch(() => {});
  }
  me = undefined;
  stopLive();
  location.hash = '#/login';
  void route();
}

function showUser(): void {
  nav.hidden = !me;
  if (!me) return replace(who);
  replace(
    who,
    h('span', { class: 'muted' }, `${me.username} (${me.role ?? 'no role'})`),
    ' ',
    h('button', { type: 'button', class: 'link', onclick: () => void signOut() }, 'Sign out'),
  );
}

async function route(): Promise<void> {
  cleanup?.();
  cleanup = undefined;
  const [path = '/devices', search = ''] = location.hash.replace(/^#/, '').split('?');
  if (!token()) {
    me = undefined;
    showUser();
    replace(app);
    loginPage(app, async () => {
      const problem = await whoAmI();
      if (problem) throw new Error(problem);
      location.hash = '#/devices';
      void route();
    });
    return;
  }
  if (!me) {
    const problem = await whoAmI();
    if (problem) return void replace(app, h('p', { class: 'error', role: 'alert' }, problem));
  }
  for (const a of nav.querySelectorAll('a')) a.toggleAttribute('aria-current', path.startsWith(a.getAttribute('href')!.slice(1)));
  const found = ROUTES.map(([re, page]) => [re.exec(path), page] as const).find(([m]) => m);
  replace(app);
  if (!found) {
    location.replace('#/devices');
    return;
  }
  const [match, page] = found;
  // Each page renders into a container of its own: a page still waiting for the server when the
  // user moves on renders, once it is answered, into a container no longer on the screen, and
  // its cleanup runs at once instead of replacing the current page's.
  const view = h('div', { class: 'page' });
  append(app, view);
  let done: Cleanup | undefined;
  try {
    done = (await page(view, match!.slice(1).map(decodeURIComponent), new URLSearchParams(search))) ?? undefined;
  } catch (err) {
    append(view, h('p', { class: 'error', role: 'alert' }, (err as Error).message));
  }
  if (!app.contains(view)) return void done?.();
  cleanup = done;
  // Focus moves to the new page, unless the page put it somewhere itself (the terminal).
  if (!app.contains(document.activeElement)) app.focus({ preventScroll: true });
}

/** Who the token belongs to; the problem, in words, when it does not work. */
async function whoAmI(): Promise<string | undefined> {
  try {
    me = await api<Me>('GET', '/v1/me');
    showUser();
    startLive();
    return undefined;
  } catch (err) {
    me = undefined;
    if (err instanceof ApiError && err.status === 401) {
      forget();
      showUser();
      return 'That token does not work: it is unknown, expired or revoked.';
    }
    showUser();
    return (err as Error).message;
  }
}

whenUnauthorized(() => {
  if (!me) return; // a sign-in that failed says so itself
  forget();
  me = undefined;
  stopLive();
  location.hash = '#/login';
});
window.addEventListener('hashchange', () => void route());
void route();
