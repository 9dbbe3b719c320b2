// Overview: every ModelAPI, MCPServer, Agent, Trigger and MemoryStore per namespace, with phase, readiness,
// endpoint and the status message when not Ready; it follows the polled list live. A signed-in
// person sees only the agents that would let them chat (access.js's shownTo asks each agent); an
// agent that does not say is shown, marked 'access unknown'.

import { badge, h, keepFocus, replace, time } from '../dom.js';
import { KIND_WORD, SEGMENT } from '../api.js';
import * as store from '../store.js';
import { accessTo, shownTo } from '../access.js';

export function pageOf(item) {
  return `#/${SEGMENT[item.kind]}/${encodeURIComponent(item.metadata?.namespace || 'default')}/${encodeURIComponent(item.metadata?.name)}`;
}

export function triggerSummary(item) {
  const spec = item.spec || {};
  const status = item.status || {};
  const last = (status.history || []).slice(-1)[0];
  const when = spec.schedule ? `schedule ${spec.schedule}${spec.timeZone ? ` (${spec.timeZone})` : ''}` : 'webhook';
  return `${when} → agent ${spec.agent}${status.nextRun ? `; next run ${time(status.nextRun)}` : ''}`
    + `${last ? `; last run ${last.outcome}` : '; no run yet'}`;
}

export function memoryStoreSummary(item) {
  const spec = item.spec || {};
  const embedding = spec.models?.embedding || {};
  return `${spec.storage?.type || 'local'} store, scope ${spec.scope || 'user'}; embeddings from ${embedding.modelAPI}/${embedding.model}`;
}

function summaryOf(item) {
  const spec = item.spec || {};
  if (item.kind === 'Trigger') return triggerSummary(item);
  if (item.kind === 'MemoryStore') return memoryStoreSummary(item);
  if (item.kind === 'Agent') return `model ${spec.model || '(from its ModelAPI)'} via ${spec.modelAPI}`;
  if (item.kind === 'ModelAPI') {
    if (spec.mode === 'Hosted') return `Hosted: ${spec.hostedConfig?.model || ''}`;
    const models = spec.proxyConfig?.models || (spec.proxyConfig?.model ? [spec.proxyConfig.model] : []);
    return `Proxy: ${models.join(', ') || 'any model'}`;
  }
  const tools = item.status?.tools || [];
  return `${spec.url ? 'external' : spec.runtime}${tools.length ? `; tools: ${tools.join(', ')}` : ''}`;
}

// What the overview says of a signed-in person's access to an agent it shows.
function accessNote(access) {
  if (!access) return null;
  if (access.state === 'unknown') {
    return h('p', { class: 'denied', 'data-access-note': 'unknown' }, `Access unknown: ${access.detail}`);
  }
  return null;
}

function row(item, access) {
  const status = item.status || {};
  const health = item.health || {};
  const name = item.metadata?.name;
  const key = store.key(item);
  const message = health.state === 'ready' ? '' : (health.detail || status.message || '');
  return h('tr', { 'data-resource': key, 'data-state': health.state, 'data-access': access?.state },
    h('td', {}, item.kind),
    h('th', { scope: 'row' }, h('a', { href: pageOf(item), 'data-key': `link:${key}`, 'aria-label': `${KIND_WORD[item.kind]} ${name}` }, name)),
    h('td', {}, badge(health), status.phase && status.phase !== health.label ? h('span', { class: 'muted' }, ` (${status.phase})`) : null),
    h('td', { class: 'nowrap' }, status.ready ? 'yes' : 'no', status.replicas !== undefined ? h('span', { class: 'muted' }, ` ${status.readyReplicas || 0}/${status.replicas || 0}`) : null),
    h('td', { class: 'mono' }, status.endpoint || '—'),
    h('td', {}, summaryOf(item)),
    h('td', { class: 'message' }, message, accessNote(access)),
  );
}

export function render(main) {
  const counts = h('p', { class: 'summary', 'aria-live': 'polite' });
  const body = h('div');
  const updated = h('p', { class: 'hint' });
  replace(main,
    h('h1', {}, 'Overview'),
    h('p', { class: 'muted' }, 'Every model API, MCP server, agent, trigger and memory store, with its status. This page follows changes live.'),
    counts, body, updated);
  const hidden = h('p', { class: 'hint', id: 'agents-hidden', 'aria-live': 'polite' });
  body.before(hidden);
  let last = '';
  let stopped = false;
  const draw = (state) => {
    if (stopped) return;
    if (state.updated) updated.textContent = `Last updated ${state.updated.toLocaleTimeString()}.`;
    if (!state.loaded) return;
    const shown = shownTo(state.items);
    const signature = JSON.stringify(state.items.map((item) => [store.key(item), item.status, item.health, item.spec, accessTo(item)]));
    if (signature === last) return;
    last = signature;
    const refused = state.items.filter((item) => accessTo(item)?.state === 'no-chat').length;
    const asking = state.items.filter((item) => accessTo(item)?.state === 'asking').length;
    hidden.dataset.hidden = String(refused);
    hidden.textContent = [
      refused ? `${refused} agent${refused === 1 ? ' is' : 's are'} not shown: ${refused === 1 ? 'its' : 'their'} `
        + 'spec.access does not let you chat (not allowed: \'chat\').' : '',
      asking ? `Asking ${asking} agent${asking === 1 ? '' : 's'} what you may do there…` : '',
    ].filter(Boolean).join(' ');
    const byState = {};
    for (const item of shown) byState[item.health?.label || 'Unknown'] = (byState[item.health?.label || 'Unknown'] || 0) + 1;
    counts.textContent = `${shown.length} resource${shown.length === 1 ? '' : 's'}: `
      + Object.entries(byState).map(([label, n]) => `${n} ${label}`).join(', ');
    keepFocus(() => {
      if (!state.items.length) {
        replace(body, h('p', {}, 'No resources yet. Apply manifests with ', h('code', {}, 'kaos apply -f <folder>'),
          ' (or ', h('code', {}, 'kubectl apply -f'), ' in a cluster); they appear here as they start.'));
        return;
      }
      const namespaces = store.namespaces().filter((namespace) => shown.some((item) => (item.metadata?.namespace || 'default') === namespace));
      replace(body, namespaces.map((namespace) => {
        const items = shown.filter((item) => (item.metadata?.namespace || 'default') === namespace);
        const id = `ns-${namespace}`;
        return h('section', { 'aria-labelledby': id, 'data-namespace': namespace },
          h('h2', { id }, `Namespace ${namespace}`),
          h('table', {},
            h('caption', { class: 'muted' }, `${items.length} resources in ${namespace}`),
            h('thead', {}, h('tr', {}, ['Kind', 'Name', 'Status', 'Ready', 'Endpoint', 'What', 'Message'].map((c) => h('th', { scope: 'col' }, c)))),
            h('tbody', {}, items.map((item) => row(item, accessTo(item))))));
      }));
    });
  };
  const unsubscribe = store.subscribe(draw);
  return () => { stopped = true; unsubscribe(); };
}
