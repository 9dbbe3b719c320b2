// Long-term memory: an agent's memories in its MemoryStore (GET /memory/long-term through the
// gateway), newest first or searched by meaning, each with a Delete button, and Forget all. With
// the store's scope user the agent shows only the caller's own: the token's principal (Token at
// the top of the page), the anonymous caller's without one.

import { h, replace } from '../dom.js';
import { getJSON, request, workloadPath } from '../api.js';
import * as store from '../store.js';
import { shownTo } from '../access.js';

const LIMIT = 100;

function option(value, label, selected) {
  return h('option', { value, selected: selected || undefined }, label);
}

function when(seconds) {
  return seconds ? new Date(seconds * 1000).toLocaleString() : '—';
}

export function render(main, namespace, name) {
  const controller = new AbortController();
  const agentSelect = h('select', { id: 'long-term-agent' });
  const query = h('input', { type: 'search', id: 'long-term-query', placeholder: 'empty: newest first', maxlength: 2000 });
  const count = h('p', { class: 'hint', 'aria-live': 'polite', id: 'long-term-count' });
  const problem = h('p', { class: 'error', role: 'alert', id: 'long-term-problem' });
  const list = h('div', { id: 'long-term-list' });
  const forgetAll = h('button', { type: 'button', class: 'danger', id: 'long-term-forget-all', disabled: true }, 'Forget all');
  let selected = namespace && name ? `${namespace}/${name}` : '';

  const path = (rest = '') => {
    const [ns, agent] = selected.split('/');
    return workloadPath('Agent', ns, agent, `/memory/long-term${rest}`);
  };

  const forget = async (id) => {
    problem.textContent = '';
    try {
      await request(path(id ? `/${encodeURIComponent(id)}` : ''), id ? `Forgetting ${id}` : 'Forgetting every memory',
        // the agent refuses a write that is not JSON (415), a DELETE without a body included
        { method: 'DELETE', headers: { 'content-type': 'application/json' }, signal: controller.signal });
    } catch (error) {
      if (error.name !== 'AbortError') problem.textContent = error.message;
      return;
    }
    refresh();
  };

  const table = (memories, searched) => h('table', {},
    h('caption', { class: 'muted' }, searched ? 'Nearest first.' : 'Newest first.'),
    h('thead', {}, h('tr', {}, ['Memory', 'Stored', ...(searched ? ['Distance'] : []), 'Session', 'Source', ''].map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, memories.map((memory) => h('tr', { 'data-memory': memory.id },
      h('td', {}, memory.text),
      h('td', { class: 'nowrap' }, when(memory.created_at)),
      ...(searched ? [h('td', {}, Number(memory.distance ?? 0).toFixed(3))] : []),
      h('td', { class: 'mono' }, memory.session_id || '—'),
      h('td', {}, memory.source || '—'),
      h('td', {}, h('button', { type: 'button', class: 'secondary', 'aria-label': `Delete memory: ${memory.text}`,
        onclick: () => forget(memory.id) }, 'Delete'))))));

  const refresh = async () => {
    forgetAll.disabled = !selected;
    if (!selected) {
      replace(list);
      count.textContent = 'Choose an agent with a memory store to read its long-term memories.';
      return;
    }
    const text = query.value.trim();
    const params = new URLSearchParams(text ? { q: text } : { limit: String(LIMIT) });
    try {
      const answer = await getJSON(path(`?${params}`), `The long-term memories of ${selected.split('/')[1]}`, { signal: controller.signal });
      problem.textContent = '';
      const memories = answer.memories || [];
      count.textContent = text
        ? `${memories.length} memor${memories.length === 1 ? 'y' : 'ies'} nearest to “${text}” (scope ${answer.scope}).`
        : `${memories.length} of ${answer.total} memor${answer.total === 1 ? 'y' : 'ies'} shown (scope ${answer.scope}).`;
      replace(list, memories.length ? table(memories, Boolean(text)) : h('p', { class: 'muted' }, 'No memories.'));
    } catch (error) {
      if (error.name === 'AbortError') return;
      replace(list);
      count.textContent = '';
      problem.textContent = error.status === 404
        ? `${error.message} An agent has long-term memory only when its spec.memory.store names a MemoryStore.`
        : error.message;
    }
  };

  const fillAgents = (state) => {
    const agents = shownTo(state.items).filter((item) => item.kind === 'Agent' && item.spec?.memory?.store)
      .map((item) => `${item.metadata.namespace || 'default'}/${item.metadata.name}`);
    const values = [...agentSelect.options].map((o) => o.value).filter(Boolean);
    if (JSON.stringify(values) === JSON.stringify(agents)) return;
    replace(agentSelect, option('', 'Choose an agent'), agents.map((id) => option(id, id, id === selected)));
    if (selected && !agents.includes(selected)) agentSelect.append(option(selected, `${selected} (no memory store)`, true));
  };

  agentSelect.addEventListener('change', () => {
    selected = agentSelect.value;
    history.replaceState(null, '', selected ? `#/long-term/${selected.split('/').map(encodeURIComponent).join('/')}` : '#/long-term');
    refresh();
  });
  forgetAll.addEventListener('click', () => {
    if (window.confirm(`Forget every long-term memory of ${selected} that you may forget? This cannot be undone.`)) forget('');
  });

  replace(main,
    h('p', { class: 'crumbs' }, h('a', { href: '#/' }, 'Overview'), name ? [' › ', h('a', { href: `#/agent/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}` }, `agent ${name}`)] : null),
    h('h1', {}, name ? `Long-term memory of ${name}` : 'Long-term memory'),
    h('p', { class: 'muted' }, 'What an agent keeps across sessions in its memory store. With scope user you see and forget only your own memories: those of the token you entered at the top of the page.'),
    h('form', { class: 'row', role: 'search', 'aria-label': 'Search memories', onsubmit: (event) => { event.preventDefault(); refresh(); } },
      h('div', {}, h('label', { for: 'long-term-agent' }, 'Agent'), agentSelect),
      h('div', {}, h('label', { for: 'long-term-query' }, 'Search'), query),
      h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Search'), forgetAll)),
    problem, count, list);

  const unsubscribe = store.subscribe((state) => { if (state.loaded) fillAgents(state); });
  refresh();
  return () => { controller.abort(); unsubscribe(); };
}
