/**
 * @module The tether web console: a single page, routed by the URL's hash (`#/devices`,
 * `#/devices/ID`, `#/terminal/ID`, `#/files/ID`, `#/services`, `#/services/ENV/NAME`,
 * `#/sessions`, `#/sessions/ID/play`, `#/jobs`, `#/jobs/ID`, `#/access`, `#/audit`, `#/users`, `#/tokens`, `#/fleet`).
 * Each page renders into `#app` and returns what ends it (a stream, a session, a subscription)
 * when you leave it. The navigation and the routes offer only what the signed-in user's role may
 * use (the server refuses the rest anyway).
 */
import '@xterm/xterm/css/xterm.css';
import './styles.css';
import type { Me, Role } from '../../shared/api/identity';
import type { JOB_KIND_ROLE } from '../../shared/api/jobs';
import { api, ApiError, whenUnauthorized } from './api';
import { currentUser, forget, setCurrentUser, token } from './auth';
import type { Cleanup, Page } from './page';
import { append, h, replace } from './dom';
import { startLive, stopLive } from './events';
import { accessPage } from './pages/access';
import { auditPage } from './pages/audit';
import { devicePage } from './pages/device';
import { devicesPage } from './pages/devices';
import { filesPage } from './pages/files';
import { fleetPage } from './pages/fleet';
import { jobsPage } from './pages/jobs';
import { jobPage } from './pages/jobs/job';
import { loginPage } from './pages/login';
import { playerPage } from './pages/player';
import { servicePage } from './pages/service';
import { servicesPage } from './pages/services';
import { sessionsPage } from './pages/sessions';
import { terminalPage } from './pages/terminal';
import { tokensPage } from './pages/tokens';
import { usersPage } from './pages/users';
import { hasRole, PROTOCOL_MIN_ROLE } from './roles';

/** Jobs: the least a role needs to start one (a diagnostics job) and see its own; typed from the API's table. */
const JOB_MIN_ROLE: (typeof JOB_KIND_ROLE)['diagnostics'] = 'developer';

/** A route: its path, its page, and the lowest role that may use it (`null`: any signed-in user). */
type Route = [RegExp, Page, Role | null];
const ROUTES: Route[] = [
  [/^\/devices$/, devicesPage, 'developer'],
  [/^\/devices\/([^/]+)$/, devicePage, 'developer'],
  [/^\/terminal\/([^/]+)$/, terminalPage, PROTOCOL_MIN_ROLE.shell],
  [/^\/files\/([^/]+)$/, filesPage, PROTOCOL_MIN_ROLE['file-transfer']],
  [/^\/services$/, servicesPage, 'developer'],
  [/^\/services\/([^/]+)\/([^/]+)$/, servicePage, 'developer'],
  [/^\/sessions$/, sessionsPage, 'developer'],
  [/^\/sessions\/([^/]+)\/play$/, playerPage, 'developer'],
  [/^\/jobs$/, jobsPage, JOB_MIN_ROLE],
  [/^\/jobs\/([^/]+)$/, jobPage, JOB_MIN_ROLE],
  [/^\/access$/, accessPage, 'developer'],
  [/^\/audit$/, auditPage, 'developer'],
  [/^\/users$/, usersPage, 'administrator'],
  [/^\/tokens$/, tokensPage, null],
  [/^\/fleet$/, fleetPage, null],
];

/** The navigation's sections, each shown to the roles that may use it. */
const SECTIONS: Array<[href: string, label: string, minimum: Role | null]> = [
  ['#/devices', 'Devices', 'developer'],
  ['#/services', 'Services', 'developer'],
  ['#/sessions', 'Sessions', 'developer'],
  ['#/jobs', 'Jobs', JOB_MIN_ROLE],
  ['#/access', 'Access', 'developer'],
  ['#/audit', 'Audit', 'developer'],
  ['#/fleet', 'Fleet', null],
  ['#/users', 'Users', 'administrator'],
  ['#/tokens', 'Tokens', null],
];

const mayUse = (me: Me | undefined, minimum: Role | null) => !!me && (minimum === null || hasRole(me, minimum));

const app = document.getElementById('app')!;
const nav = document.getElementById('nav')!;
const who = document.getElementById('who')!;
let cleanup: Cleanup | undefined;

async function signOut(): Promise<void> {
  const me = currentUser();
  const { token: t, obtainedHere } = forget();
  // A token this console obtained is revoked; a pasted one is only forgotten here.
  if (t && obtainedHere && me) {
    await fetch(`/v1/tokens/${encodeURIComponent(me.token_id)}`, { method: 'DELETE', headers: { authorization: `Bearer ${t}` } }).catch(() => {});
  }
  setCurrentUser(undefined);
  stopLive();
  location.hash = '#/login';
  void route();
}

/** The first section the user may use: where the console starts and where it sends the lost. */
const home = () => SECTIONS.find(([, , minimum]) => mayUse(currentUser(), minimum))?.[0] ?? '#/tokens';

function showUser(): void {
  const me = currentUser();
  nav.hidden = !me;
  replace(nav, ...SECTIONS.filter(([, , minimum]) => mayUse(me, minimum)).map(([href, label]) => h('a', { href }, label)));
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
  const [path = '', search = ''] = location.hash.replace(/^#/, '').split('?');
  if (!token()) {
    setCurrentUser(undefined);
    showUser();
    replace(app);
    loginPage(app, async () => {
      const problem = await whoAmI();
      if (problem) throw new Error(problem);
      location.hash = home();
      void route();
    });
    return;
  }
  if (!currentUser()) {
    const problem = await whoAmI();
    if (problem) return void replace(app, h('p', { class: 'error', role: 'alert' }, problem));
  }
  for (const a of nav.querySelectorAll('a')) a.toggleAttribute('aria-current', path.startsWith(a.getAttribute('href')!.slice(1)));
  const found = ROUTES.map(([re, page, minimum]) => [re.exec(path), page, minimum] as const).find(([m]) => m);
  replace(app);
  if (!found) {
    location.replace(home());
    return;
  }
  const [match, page, minimum] = found;
  if (!mayUse(currentUser(), minimum)) {
    return void append(app, h('p', { class: 'error', role: 'alert' }, `This page needs the role ${minimum} or higher.`));
  }
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
    setCurrentUser(await api<Me>('GET', '/v1/me'));
    showUser();
    // Presence needs devices:read, which a role-less user lacks: listen only when it can be heard.
    if (hasRole(currentUser(), 'developer')) startLive();
    return undefined;
  } catch (err) {
    setCurrentUser(undefined);
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
  if (!currentUser()) return; // a sign-in that failed says so itself
  forget();
  setCurrentUser(undefined);
  stopLive();
  location.hash = '#/login';
});
window.addEventListener('hashchange', () => void route());
void route();
