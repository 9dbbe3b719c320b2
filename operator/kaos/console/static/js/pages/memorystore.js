// MemoryStore page: where the memories live, which models embed and extract them, whether the
// store and the embedder answer (MemoryDegraded), and the agents that use it, each linking to its
// long-term memories.

import { badge, h, pageHead, panel, replace } from '../dom.js';
import * as store from '../store.js';

function conditionRow(condition) {
  return h('tr', { 'data-condition': condition.type, 'data-status': condition.status },
    h('th', { scope: 'row' }, condition.type), h('td', {}, condition.status), h('td', {}, condition.reason || ''),
    h('td', { class: 'message' }, condition.message || ''));
}

export function render(main, namespace, name) {
  const facts = h('div');
  const agents = h('div');
  replace(main, pageHead(namespace, 'memory store', `Memory store ${name}`),
    panel('store-status', 'Status', facts), panel('store-agents', 'Agents using it', agents));

  const usersOf = (state) => store.agentsUsing(state, namespace, (agent) => agent.spec?.memory?.store === name);
  const unsubscribe = store.watch('MemoryStore', namespace, name, (item, state) => {
    const users = usersOf(state);
    if (!item) { replace(facts, h('p', { class: 'error' }, 'This memory store is not in the resource list.')); replace(agents); return; }
    const spec = item.spec || {};
    const status = item.status || {};
    const storage = spec.storage || {};
    const external = storage.external || {};
    const where = storage.type === 'external'
      ? `PostgreSQL with pgvector at ${external.url || `the URL in Secret ${external.connectionSecretRef?.name} (key ${external.connectionSecretRef?.key})`}`
      : 'embedded (a sqlite-vec file the agent keeps)';
    const model = (ref) => (ref ? `${ref.model} from model API ${ref.modelAPI}` : 'the agent\'s own model');
    replace(facts,
      h('dl', { class: 'facts' },
        h('dt', {}, 'Status'), h('dd', {}, badge(item.health), ' ', h('span', { class: 'muted', 'data-message': '' }, status.message || '')),
        h('dt', {}, 'Storage'), h('dd', {}, where),
        h('dt', {}, 'Collection'), h('dd', { class: 'mono' }, status.collection || `${namespace}-${name}`),
        h('dt', {}, 'Scope'), h('dd', {}, spec.scope || 'user'),
        h('dt', {}, 'Embedding'), h('dd', {}, model(spec.models?.embedding)),
        h('dt', {}, 'Extraction'), h('dd', {}, model(spec.models?.summarization)),
        h('dt', {}, 'Retention'), h('dd', {}, spec.retentionDays ? `${spec.retentionDays} days` : 'kept until forgotten'),
        h('dt', {}, 'Recalled per turn'), h('dd', {}, `at most ${spec.topK || 5}`)),
      (status.conditions || []).length
        ? h('table', {}, h('caption', { class: 'muted' }, 'Conditions'),
          h('thead', {}, h('tr', {}, ['Type', 'Status', 'Reason', 'Message'].map((c) => h('th', { scope: 'col' }, c)))),
          h('tbody', {}, status.conditions.map(conditionRow)))
        : null);
    replace(agents, users.length
      ? h('ul', {}, users.map((agent) => {
        const path = [namespace, agent.metadata.name].map(encodeURIComponent).join('/');
        return h('li', {}, h('a', { href: `#/agent/${path}` }, `agent ${agent.metadata.name}`), ' · ',
          h('a', { href: `#/long-term/${path}` }, 'its long-term memories'));
      }))
      : h('p', { class: 'muted' }, 'No agent names this store (spec.memory.store).'));
  }, (state) => usersOf(state).map(store.key));
  return () => unsubscribe();
}
