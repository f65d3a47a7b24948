/**
 * @module Which tenant the fleet page shows. Tenants come from the token (`GET /v1/me`): one is
 * used as it is, several give a choice, `*` (every tenant) asks for its name; the choice lives in
 * the URL (`#/fleet?tenant=acme`), so a reload or a shared link keeps it.
 */
import type { Me } from '../../../../shared/api/identity';
import { h } from '../../dom';

/** The tenant to show now, or undefined when the user must name one first. */
export function chosenTenant(me: Me, query: URLSearchParams): string | undefined {
  const asked = query.get('tenant') ?? undefined;
  const all = me.tenants.includes('*');
  if (asked && (all || me.tenants.includes(asked))) return asked;
  const own = me.tenants.filter((t) => t !== '*');
  return all ? undefined : own[0];
}

const go = (tenant: string) => void (location.hash = `#/fleet?tenant=${encodeURIComponent(tenant)}`);

/** The selector (several tenants) or the name field (`*`); nothing for a single tenant. */
export function tenantPicker(me: Me, current: string | undefined): HTMLElement | false {
  const own = me.tenants.filter((t) => t !== '*');
  if (me.tenants.includes('*')) {
    const name = h('input', { id: 'fleet-tenant', required: true, pattern: '[A-Za-z0-9._\\-]{1,64}', value: current ?? '', list: 'fleet-tenants' });
    return h(
      'form',
      { class: 'filters', onsubmit: (e: Event) => (e.preventDefault(), go(name.value.trim())) },
      h('label', { for: 'fleet-tenant' }, 'Tenant'),
      name,
      h('datalist', { id: 'fleet-tenants' }, ...own.map((t) => h('option', { value: t }))),
      h('button', { type: 'submit' }, 'Show'),
    );
  }
  if (own.length < 2) return false;
  const select = h('select', { id: 'fleet-tenant' }, ...own.map((t) => h('option', { value: t, selected: t === current }, t)));
  select.addEventListener('change', () => go(select.value));
  return h('div', { class: 'filters' }, h('label', { for: 'fleet-tenant' }, 'Tenant'), select);
}
