// MCP server page: its tools (MCP tools/list, live) and a form to call one with JSON arguments.

import { badge, h, pageHead, panel, pretty, replace } from '../dom.js';
import { McpClient, toolResultText } from '../api.js';
import * as store from '../store.js';
import { tryForm } from '../tryform.js';

// Arguments to start from: every property of the schema with an empty value of its type.
export function skeleton(schema) {
  const blank = { string: '', integer: 0, number: 0, boolean: false, array: [], object: {} };
  const out = {};
  for (const [key, prop] of Object.entries(schema?.properties || {})) {
    const type = Array.isArray(prop.type) ? prop.type[0] : prop.type;
    out[key] = prop.default !== undefined ? prop.default : (type in blank ? blank[type] : null);
  }
  return out;
}

export function render(main, namespace, name) {
  const client = new McpClient(namespace, name);
  const status = h('div');
  const tools = h('div', { 'aria-live': 'polite' }, h('p', { class: 'muted' }, 'Asking the server for its tools (tools/list)…'));
  const toolSelect = h('select', { id: 'tool-name' });
  const args = h('textarea', { id: 'tool-arguments', class: 'code', spellcheck: 'false' }, '{}');
  const callButton = h('button', { type: 'submit' }, 'Call tool');
  const result = h('div', { id: 'tool-result', role: 'status', 'aria-live': 'polite' });
  let known = [];
  let stopped = false;

  const pick = (toolName) => {
    const tool = known.find((t) => t.name === toolName);
    toolSelect.value = toolName;
    args.value = JSON.stringify(skeleton(tool?.inputSchema), null, 2);
  };
  toolSelect.addEventListener('change', () => pick(toolSelect.value));

  let parsed;
  const layout = { choice: ['Tool', toolSelect], input: ['Arguments (JSON object)', args], button: callButton, result };
  const form = tryForm('Call a tool', layout, {
    check: () => {
      try {
        parsed = JSON.parse(args.value || '{}');
        if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('the arguments must be a JSON object, e.g. {"a": 1}');
      } catch (error) {
        args.focus();
        return `The arguments are not valid: ${error.message}`;
      }
      return toolSelect.value ? null : 'Choose a tool first.';
    },
    pending: () => `Calling ${toolSelect.value}…`,
    work: async () => {
      const answer = await client.callTool(toolSelect.value, parsed);
      if (stopped) return null;
      const text = toolResultText(answer);
      return [h('h3', {}, answer?.isError ? `The tool ${toolSelect.value} reported an error` : `Result of ${toolSelect.value}`),
        h('pre', { class: answer?.isError ? 'error' : '', 'data-result': answer?.isError ? 'error' : 'ok' }, text || '(no content)'),
        h('details', {}, h('summary', {}, 'Full MCP answer'), h('pre', {}, pretty(answer)))];
    },
    mark: 'result',
  });

  replace(main, pageHead(namespace, 'MCP server', `MCP server ${name}`),
    h('div', { class: 'grid' }, panel('tools', 'Tools', status, tools), panel('call', 'Call a tool', form, result)));

  const usersOf = (state) => store.agentsUsing(state, namespace, (agent) => (agent.spec?.mcpServers || []).includes(name))
    .map((agent) => agent.metadata.name);
  const unsubscribe = store.watch('MCPServer', namespace, name, (item, state) => {
    if (!item) { replace(status, h('p', { class: 'error' }, 'This MCP server is not in the resource list.')); return; }
    const users = usersOf(state);
    replace(status, h('dl', { class: 'facts' },
      h('dt', {}, 'Status'), h('dd', {}, badge(item.health), ' ', h('span', { class: 'muted' }, item.health?.state === 'ready' ? '' : (item.health?.detail || ''))),
      h('dt', {}, 'Runtime'), h('dd', {}, item.spec?.url ? `external: ${item.spec.url}` : item.spec?.runtime),
      h('dt', {}, 'Endpoint'), h('dd', { class: 'mono' }, item.status?.endpoint || '—'),
      h('dt', {}, 'Used by'), h('dd', {}, users.length ? users.flatMap((u, i) => [i ? ', ' : '', h('a', { href: `#/agent/${encodeURIComponent(namespace)}/${encodeURIComponent(u)}` }, u)]) : 'no agent')));
  }, usersOf);

  client.listTools().then((list) => {
    if (stopped) return;
    known = list;
    replace(toolSelect, list.map((tool) => h('option', { value: tool.name }, tool.name)));
    if (list.length) pick(list[0].name);
    replace(tools, list.length ? h('table', {},
      h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Tool'), h('th', { scope: 'col' }, 'Description'), h('th', { scope: 'col' }, 'Input schema'))),
      h('tbody', {}, list.map((tool) => h('tr', { 'data-tool': tool.name },
        h('th', { scope: 'row' }, h('code', {}, tool.name)), h('td', {}, tool.description || ''),
        h('td', {}, h('details', {}, h('summary', {}, 'Show'), h('pre', {}, pretty(tool.inputSchema || {})))))))) :
      h('p', { class: 'muted' }, 'The server offers no tools.'));
  }).catch((error) => {
    if (stopped) return;
    replace(tools, h('p', { class: 'error' }, error.message),
      h('p', { class: 'hint' }, 'The tools are asked from the running server; reload the page once it is Ready.'));
  });

  return () => { stopped = true; unsubscribe(); };
}
