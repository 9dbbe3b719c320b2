// ModelAPI page: the models it offers (its spec, and /v1/models live) and a one-shot test prompt.

import { badge, h, pageHead, panel, pretty, replace } from '../dom.js';
import { getJSON, postJSON, workloadPath } from '../api.js';
import * as store from '../store.js';
import { tryForm } from '../tryform.js';

function specModels(item) {
  const spec = item?.spec || {};
  if (spec.mode === 'Hosted') return spec.hostedConfig?.model ? [spec.hostedConfig.model] : [];
  return spec.proxyConfig?.models || (spec.proxyConfig?.model ? [spec.proxyConfig.model] : []);
}

export function render(main, namespace, name) {
  const controller = new AbortController();
  const status = h('div');
  const live = h('div', { 'aria-live': 'polite' }, h('p', { class: 'muted' }, 'Asking the model API for its models (/v1/models)…'));
  const modelSelect = h('select', { id: 'prompt-model' });
  const prompt = h('textarea', { id: 'prompt-text', rows: '3' }, 'Say hello in one short sentence.');
  const sendButton = h('button', { type: 'submit' }, 'Send prompt');
  const result = h('div', { id: 'prompt-result', role: 'status', 'aria-live': 'polite' });
  let offered = [];

  const setModels = (models) => {
    const current = modelSelect.value;
    const all = [...new Set(models)].filter((m) => m && !m.includes('*'));
    if (JSON.stringify(all) === JSON.stringify(offered)) return;
    offered = all;
    replace(modelSelect, all.map((m) => h('option', { value: m, selected: m === current || undefined }, m)));
  };

  const layout = { choice: ['Model', modelSelect], input: ['Prompt', prompt], button: sendButton, result };
  const form = tryForm('Test prompt', layout, {
    check: () => (!prompt.value.trim() ? 'Type a prompt first.' : !modelSelect.value ? 'Choose a model first.' : null),
    pending: () => `Asking ${modelSelect.value}…`,
    work: async () => {
      const started = performance.now();
      const { payload } = await postJSON(workloadPath('ModelAPI', namespace, name, '/v1/chat/completions'),
        { model: modelSelect.value, messages: [{ role: 'user', content: prompt.value.trim() }] }, `The model ${modelSelect.value} of ${name}`,
        { signal: controller.signal });
      const answer = payload?.choices?.[0]?.message?.content ?? '';
      return [h('h3', {}, `Answer of ${payload.model || modelSelect.value} in ${Math.round(performance.now() - started)} ms`),
        h('pre', { 'data-answer': '' }, answer || '(empty answer)'),
        payload.usage ? h('p', { class: 'hint' }, `Tokens: ${payload.usage.prompt_tokens ?? '?'} in, ${payload.usage.completion_tokens ?? '?'} out.`) : null];
    },
    mark: 'answer',
  });

  replace(main, pageHead(namespace, 'model API', `Model API ${name}`),
    h('div', { class: 'grid' }, panel('models', 'Models', status, live), panel('try', 'Test prompt',
      h('p', { class: 'hint' }, 'One message, straight to the model API (no agent in between).'), form, result)));

  const usersOf = (state) => store.agentsUsing(state, namespace, (agent) => agent.spec?.modelAPI === name);
  const unsubscribe = store.watch('ModelAPI', namespace, name, (item, state) => {
    if (!item) { replace(status, h('p', { class: 'error' }, 'This model API is not in the resource list.')); return; }
    const users = usersOf(state);
    replace(status, h('dl', { class: 'facts' },
      h('dt', {}, 'Status'), h('dd', {}, badge(item.health), ' ', h('span', { class: 'muted' }, item.health?.state === 'ready' ? '' : (item.health?.detail || ''))),
      h('dt', {}, 'Mode'), h('dd', {}, item.spec?.mode),
      h('dt', {}, 'Models offered'), h('dd', {}, h('ul', { class: 'tags', 'aria-label': 'Models in the spec' }, specModels(item).map((m) => h('li', {}, m)))),
      h('dt', {}, 'Endpoint'), h('dd', { class: 'mono' }, item.status?.endpoint || '—'),
      h('dt', {}, 'Used by'), h('dd', {}, users.length ? users.flatMap((u, i) => [i ? ', ' : '',
        h('a', { href: `#/agent/${encodeURIComponent(namespace)}/${encodeURIComponent(u.metadata.name)}` }, `${u.metadata.name} (${u.spec?.model || 'default model'})`)]) : 'no agent')),
    h('details', {}, h('summary', {}, 'Spec'), h('pre', {}, pretty(item.spec || {}))));
    if (!offered.length) setModels(specModels(item));
  }, (state) => usersOf(state).map((user) => [user.metadata.name, user.spec?.model]));

  getJSON(workloadPath('ModelAPI', namespace, name, '/v1/models'), `The model list of ${name}`, { signal: controller.signal })
    .then((payload) => {
      const ids = (payload.data || payload.models || []).map((m) => m.id || m.name).filter(Boolean);
      replace(live, h('h3', {}, 'Served now (/v1/models)'), ids.length ? h('ul', { class: 'tags', 'aria-label': 'Models served now' }, ids.map((m) => h('li', {}, m)))
        : h('p', { class: 'muted' }, 'It lists no models.'));
      if (ids.length) { offered = []; setModels(ids); }
    })
    .catch((error) => { if (error.name !== 'AbortError') replace(live, h('p', { class: 'error' }, error.message)); });

  return () => { controller.abort(); unsubscribe(); };
}
