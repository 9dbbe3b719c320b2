// Audit: the audit trail of every Ready agent (GET /audit, admins only; docs/security.md):
// approval decisions and refusals, denied calls, admin reads, with the user, the time and the
// object, newest first. An agent that does not let this person read its trail says which grant
// is missing ("not allowed: 'admin'").

import { getJSON, workloadPath } from '../api.js';
import { h, replace, time } from '../dom.js';
import * as store from '../store.js';

const REFRESH_MS = 3000;
const LIMIT = 200;
const SHOWN = new Set(['time', 'agent', 'action', 'user', 'object']);

function details(event) {
  return Object.entries(event).filter(([key]) => !SHOWN.has(key)).map(([key, value]) => `${key}: ${value}`).join('; ');
}

function row(namespace, event) {
  return h('tr', { 'data-action': event.action, 'data-user': event.user },
    h('td', { class: 'nowrap' }, h('time', { datetime: event.time }, time(event.time))),
    h('td', {}, h('a', { href: `#/agent/${encodeURIComponent(namespace)}/${encodeURIComponent(event.agent)}` }, event.agent)),
    h('th', { scope: 'row' }, h('code', {}, event.action)),
    h('td', { class: 'mono' }, event.user),
    h('td', { class: 'mono' }, event.object),
    h('td', { class: 'message' }, details(event)));
}

export function render(main) {
  const controller = new AbortController();
  const count = h('p', { class: 'hint', 'aria-live': 'polite', id: 'audit-count' });
  const refusals = h('ul', { class: 'plain', 'aria-label': 'Agents whose trail is not shown' });
  const body = h('tbody');
  const table = h('table', { class: 'audit', hidden: true },
    h('thead', {}, h('tr', {}, ['Time', 'Agent', 'Action', 'User', 'Object', 'Detail'].map((c) => h('th', { scope: 'col' }, c)))), body);
  let timer = null;

  const refresh = async () => {
    clearTimeout(timer);
    const agents = store.state.items.filter((item) => item.kind === 'Agent' && item.status?.ready);
    const problems = [];
    const events = [];
    await Promise.all(agents.map(async (item) => {
      const namespace = item.metadata.namespace || 'default';
      try {
        const payload = await getJSON(workloadPath('Agent', namespace, item.metadata.name, `/audit?limit=${LIMIT}`),
          `The audit trail of ${item.metadata.name}`, { signal: controller.signal });
        for (const event of payload.events || []) events.push([namespace, event]);
      } catch (error) {
        if (error.name !== 'AbortError') problems.push(error);
      }
    }));
    if (controller.signal.aborted) return;
    events.sort((a, b) => String(b[1].time).localeCompare(String(a[1].time)));
    replace(body, events.map(([namespace, event]) => row(namespace, event)));
    table.hidden = !events.length;
    count.textContent = `${events.length} event${events.length === 1 ? '' : 's'} of ${agents.length - problems.length} of ${agents.length} Ready agent${agents.length === 1 ? '' : 's'}.`;
    replace(refusals, problems.map((error) => h('li', { class: error.status === 403 ? 'denied' : 'error', 'data-denied': error.denied || undefined }, error.message)));
    timer = setTimeout(refresh, REFRESH_MS);
  };

  replace(main,
    h('h1', {}, 'Audit'),
    h('p', { class: 'muted' }, 'What people did and were refused on each agent: approval decisions, denied calls, admin reads. ',
      'Each agent shows its trail to its admins (spec.auth.admins, or a spec.access rule granting admin).'),
    count, refusals, table);
  let started = false;
  const unsubscribe = store.subscribe((state) => { if (state.loaded && !started) { started = true; refresh(); } });
  return () => { controller.abort(); clearTimeout(timer); unsubscribe(); };
}
