// Network graph: per namespace, agents in layers (an agent left of the peers it may delegate
// to), MCP servers and ModelAPIs in the last column; edges for agentNetwork.access (delegates),
// mcpServers (tools) and modelAPI (model). Nodes are coloured by status (and say it in words);
// an access entry that is a URL is an A2A agent outside KAOS: a grey pill named by its host,
// whose state the console does not know, linking to its agent card. A delegation edge that
// carried a delegation in the last minutes, according to the agents' memory events
// (delegation_request), is highlighted. A signed-in person sees the agents the overview shows them
// (access.js's shownTo): not those that would refuse their chat, nor edges to those.

import { badge, h, replace, svg } from '../dom.js';
import { getJSON, KIND_WORD, workloadPath } from '../api.js';
import * as store from '../store.js';
import { shownTo } from '../access.js';
import { cardUrl, hostLabel, matchPeer, splitAccess } from '../peers.js';
import { pageOf } from './overview.js';

export const RECENT_MINUTES = 10;
const W = 200, H = 58, COLUMN = 330, ROW = 84, MARGIN = 30, TOP = 46;
const EXTERNAL = 'A2A';  // the node kind of an A2A agent named by URL (its id: A2A/<url>)
const EXTERNAL_FILL = '#f6f8fa', EXTERNAL_STROKE = '#59636e';  // console.css's --panel and --muted
const LABEL_CHARS = 21;  // of a host label in 13px bold that fits a node

function nsOf(item) { return item.metadata?.namespace || 'default'; }

const isAgentNode = (id) => id.startsWith('Agent/') || id.startsWith(`${EXTERNAL}/`);
const byId = (a, b) => (a.startsWith(`${EXTERNAL}/`) - b.startsWith(`${EXTERNAL}/`)) || (a < b ? -1 : a > b ? 1 : 0);
const clip = (text) => (text.length > LABEL_CHARS ? `${text.slice(0, LABEL_CHARS - 1)}…` : text);

// Nodes and edges of one namespace, of the ``items`` the person is shown (access.js); a reference
// to something that does not exist is a "missing" node, to something of ``all`` not shown no edge
// at all, a URL in agentNetwork.access an "external" node (shared by the agents that name it).
export function model(items, namespace, all = items) {
  const nodes = new Map();
  const add = (item) => nodes.set(`${item.kind}/${item.metadata.name}`, { item, kind: item.kind, name: item.metadata.name });
  items.filter((item) => nsOf(item) === namespace && item.kind !== 'Trigger').forEach(add);  // triggers: their own page
  const edges = [];
  const hidden = new Set(all.filter((item) => nsOf(item) === namespace).map((item) => `${item.kind}/${item.metadata.name}`)
    .filter((id) => !nodes.has(id)));
  const reference = (kind, name) => {
    const id = `${kind}/${name}`;
    if (hidden.has(id)) return null;
    if (!nodes.has(id)) nodes.set(id, { item: null, kind, name, missing: true });
    return id;
  };
  const external = (url) => {
    const id = `${EXTERNAL}/${url}`;
    if (!nodes.has(id)) nodes.set(id, { item: null, kind: EXTERNAL, name: url, url, external: true });
    return id;
  };
  for (const node of [...nodes.values()].filter((n) => n.kind === 'Agent' && n.item)) {
    const spec = node.item.spec || {};
    const from = `Agent/${node.name}`;
    const { names, urls } = splitAccess(spec.agentNetwork?.access);
    for (const peer of new Set(names)) edges.push({ from, to: reference('Agent', peer), type: 'delegates' });
    for (const url of urls) edges.push({ from, to: external(url), type: 'delegates' });
    for (const server of spec.mcpServers || []) edges.push({ from, to: reference('MCPServer', server), type: 'tools' });
    if (spec.modelAPI) edges.push({ from, to: reference('ModelAPI', spec.modelAPI), type: 'model' });
  }
  return { nodes, edges: edges.filter((edge) => edge.to !== null) };
}

// Columns: agents by how long a delegation chain below them is (longest last), then tools and models.
export function layout({ nodes, edges }) {
  const peers = new Map();
  for (const edge of edges) if (edge.type === 'delegates') (peers.get(edge.from) || peers.set(edge.from, []).get(edge.from)).push(edge.to);
  const levels = new Map();
  const level = (id, visiting = new Set()) => {
    if (levels.has(id)) return levels.get(id);
    if (visiting.has(id)) return 0;  // a cycle: A may delegate to B and B to A
    visiting.add(id);
    const below = (peers.get(id) || []).map((peer) => level(peer, visiting) + 1);
    visiting.delete(id);
    const value = Math.max(0, ...below);
    levels.set(id, value);
    return value;
  };
  const agents = [...nodes.keys()].filter(isAgentNode).sort(byId);
  agents.forEach((id) => level(id));
  const deepest = Math.max(0, ...agents.map((id) => levels.get(id)));
  const columns = [];
  for (const id of agents) {
    const column = deepest - levels.get(id);
    (columns[column] ||= []).push(id);
  }
  const last = agents.length ? deepest + 1 : 0;
  const others = [...nodes.keys()].filter((id) => !isAgentNode(id))
    .sort((a, b) => (a.startsWith('MCPServer/') ? 0 : 1) - (b.startsWith('MCPServer/') ? 0 : 1) || a.localeCompare(b));
  if (others.length) columns[last] = others;
  const position = new Map();
  columns.forEach((ids, column) => (ids || []).forEach((id, row) => position.set(id, { x: MARGIN + column * COLUMN, y: TOP + row * ROW, column })));
  const rows = Math.max(1, ...columns.map((ids) => (ids || []).length));
  const lane = TOP + rows * ROW + 4;
  return { position, width: MARGIN * 2 + (columns.length - 1) * COLUMN + W, height: lane + 40, columns: columns.length, last, lane };
}

function stateOf(node) {
  if (node.external) return { state: 'external', label: 'External', detail: 'an A2A agent outside KAOS, whose state the console does not know' };
  if (node.missing) return { state: 'missing', label: 'Not found', detail: `no ${KIND_WORD[node.kind]} ${node.name} in this namespace` };
  return node.item.health || { state: 'starting', label: 'Unknown' };
}

function edgePath(a, b, lane) {
  if (b.column > a.column + 1) {
    // Past the columns between: down from the source, along a lane below every node, up into the target.
    const x1 = a.x + W / 2 + 30, y1 = a.y + H, x2 = b.x - 2, y2 = b.y + H / 2;
    return { d: `M${x1},${y1} C${x1},${lane} ${x1 + 20},${lane} ${x1 + 60},${lane} L${x2 - 90},${lane} C${x2 - 30},${lane} ${x2 - 50},${y2} ${x2},${y2}`,
      mid: [(x1 + x2) / 2, lane] };
  }
  if (b.column > a.column) {
    const x1 = a.x + W, y1 = a.y + H / 2, x2 = b.x - 2, y2 = b.y + H / 2, bend = Math.max(40, (x2 - x1) / 2);
    // The label near the target, not halfway, where edges that cross (A to D, B to C) would share it.
    const t = 0.7, u = 1 - t, at = (p0, p1, p2, p3) => u * u * u * p0 + 3 * u * u * t * p1 + 3 * u * t * t * p2 + t * t * t * p3;
    return { d: `M${x1},${y1} C${x1 + bend},${y1} ${x2 - bend},${y2} ${x2},${y2}`,
      mid: [at(x1, x1 + bend, x2 - bend, x2), at(y1, y1, y2, y2)] };
  }
  // Same or earlier column (a cycle): around below the nodes.
  const x1 = a.x + W / 2 + 20, y1 = a.y + H, x2 = b.x + W / 2 - 20, y2 = b.y + H + 2, low = Math.max(y1, y2) + 40;
  return { d: `M${x1},${y1} C${x1},${low} ${x2},${low} ${x2},${y2}`, mid: [(x1 + x2) / 2, low - 8] };
}

// The names at both ends of an edge, its target node and its data-edge key ("<ns>/<from>-><ns>/<to>",
// or "<ns>/<from>-><url>" for an A2A agent outside KAOS, which is in no namespace).
function ends(namespace, nodes, edge) {
  const source = nodes.get(edge.from), target = nodes.get(edge.to);
  const fromName = source?.name ?? edge.from, toName = target?.name ?? edge.to;
  const key = `${namespace}/${fromName}->${target?.external ? toName : `${namespace}/${toName}`}`;
  return { fromName, toName, target, key };
}

// An A2A agent named by URL: a grey pill (not a status colour) labelled by its host and path,
// the full URL in its accessible name and title; it opens the agent's card in a new tab.
function externalNode(node, x, y, attrs, health) {
  const label = `A2A agent at ${node.url}: ${health.label} (${health.detail}). Opens its agent card in a new tab.`;
  return svg('a', { ...attrs, href: cardUrl(node.url), target: '_blank', rel: 'noopener noreferrer', 'aria-label': label, 'data-url': node.url },
    svg('rect', { x, y, width: W, height: H, rx: H / 2, fill: EXTERNAL_FILL, stroke: EXTERNAL_STROKE }),
    svg('text', { x: x + 18, y: y + 23, text: clip(hostLabel(node.url)), 'font-weight': '700' }),
    svg('text', { class: 'sub', x: x + 18, y: y + 43, text: `A2A agent · ${health.label} ↗` }),
    svg('title', { text: label }));
}

function draw(namespace, graphModel, recent) {
  const { nodes, edges } = graphModel;
  const { position, width, height, last, lane } = layout(graphModel);
  const marker = (id, colour) => svg('marker', { id, viewBox: '0 0 10 10', refX: '9', refY: '5', markerWidth: '12', markerHeight: '12', markerUnits: 'userSpaceOnUse', orient: 'auto-start-reverse' },
    svg('path', { d: 'M0,0 L10,5 L0,10 z', fill: colour }));
  const defs = svg('defs', {}, marker(`arrow-${namespace}`, '#6e7781'), marker(`arrow-recent-${namespace}`, '#8250df'));
  const titles = [];
  const agentColumns = last;
  for (let column = 0; column < agentColumns; column++) {
    titles.push(svg('text', { class: 'column-title', x: MARGIN + column * COLUMN, y: 24, text: column === 0 ? 'Agents' : 'Agents they delegate to' }));
  }
  if ([...nodes.keys()].some((id) => !isAgentNode(id))) {
    titles.push(svg('text', { class: 'column-title', x: MARGIN + last * COLUMN, y: 24, text: 'MCP servers and model APIs' }));
  }
  const edgeEls = edges.filter((edge) => position.has(edge.from) && position.has(edge.to)).map((edge) => {
    const a = position.get(edge.from), b = position.get(edge.to);
    const { d, mid } = edgePath(a, b, lane);
    const { fromName, toName, target, key } = ends(namespace, nodes, edge);
    const count = edge.type === 'delegates' ? (recent.get(`${fromName}->${edge.to}`) || 0) : 0;
    const classes = `edge ${edge.type}${count ? ' recent' : ''}`;
    const verb = edge.type === 'delegates' ? (target?.external ? 'may delegate to the A2A agent at' : 'may delegate to')
      : edge.type === 'tools' ? 'uses the tools of' : 'uses the model API';
    const group = svg('g', {},
      svg('path', { class: classes, d, 'marker-end': `url(#arrow${count ? '-recent' : ''}-${namespace})`,
        'data-edge': key, 'data-type': edge.type, 'data-recent': String(count) },
      svg('title', { text: `${fromName} ${verb} ${toName}${count ? ` (${count} delegation${count > 1 ? 's' : ''} in the last ${RECENT_MINUTES} minutes)` : ''}` })));
    if (count) group.append(svg('text', { class: 'edge-label', x: mid[0], y: mid[1] - 10, 'text-anchor': 'middle', text: `${count} recent` }));
    return group;
  });
  const nodeEls = [...nodes.entries()].filter(([id]) => position.has(id)).map(([id, node]) => {
    const { x, y } = position.get(id);
    const health = stateOf(node);
    const attrs = { class: `node state-${health.state}`, 'data-node': `${node.kind}/${namespace}/${node.name}`, 'data-state': health.state };
    if (node.external) return externalNode(node, x, y, attrs, health);
    const href = node.missing ? null : pageOf(node.item);
    const label = `${KIND_WORD[node.kind]} ${node.name}: ${health.label}${health.detail ? ` (${health.detail})` : ''}`;
    const body = [
      svg('rect', { x, y, width: W, height: H, rx: 8 }),
      svg('text', { x: x + 12, y: y + 23, text: node.name, 'font-weight': '700' }),
      svg('text', { class: 'sub', x: x + 12, y: y + 43, text: `${KIND_WORD[node.kind]} · ${health.label}` }),
      svg('title', { text: label }),
    ];
    return href ? svg('a', { ...attrs, href, 'aria-label': label }, ...body) : svg('g', { ...attrs, role: 'img', 'aria-label': label }, ...body);
  });
  return svg('svg', { class: 'graph', width, height, viewBox: `0 0 ${width} ${height}`, role: 'group',
    'aria-label': `Network graph of namespace ${namespace}` }, defs, ...titles, ...edgeEls, ...nodeEls);
}

function connections(namespace, graphModel, recent) {
  const items = graphModel.edges.map((edge) => {
    const { fromName: from, toName: to, target, key } = ends(namespace, graphModel.nodes, edge);
    const count = edge.type === 'delegates' ? (recent.get(`${from}->${edge.to}`) || 0) : 0;
    const verb = target?.external ? 'may delegate to the A2A agent outside KAOS at'
      : { delegates: 'may delegate to agent', tools: 'uses the tools of MCP server', model: 'uses model API' }[edge.type];
    return h('li', { 'data-connection': key }, `${from} ${verb} `,
      target?.external ? h('a', { href: cardUrl(to), target: '_blank', rel: 'noopener noreferrer' }, to) : to,
      target?.missing ? h('strong', { class: 'state-missing' }, ' (not found)') : null,
      count ? h('strong', {}, ` — ${count} delegation${count > 1 ? 's' : ''} in the last ${RECENT_MINUTES} minutes`) : null);
  });
  return h('details', {}, h('summary', {}, `Connections in ${namespace} as a list (${items.length})`), h('ul', {}, items));
}

// "<from>-><node id>" -> number of delegation_request events of the last RECENT_MINUTES, per namespace.
// The peer an event names is an Agent's name, or an A2A agent's name (from its card, or derived from
// its URL): matched to the URL when it can be (peers.js matchPeer), left out when it cannot.
async function recentDelegations(items, signal) {
  const since = Date.now() - RECENT_MINUTES * 60 * 1000;
  const counts = new Map();
  const agents = items.filter((item) => item.kind === 'Agent' && item.status?.ready && (item.spec?.agentNetwork?.access || []).length);
  await Promise.all(agents.map(async (item) => {
    const namespace = nsOf(item);
    try {
      const payload = await getJSON(workloadPath('Agent', namespace, item.metadata.name, '/memory/events?event_type=delegation_request&limit=200'),
        `The memory of ${item.metadata.name}`, { signal });
      for (const event of payload.events || []) {
        if (new Date(event.timestamp).getTime() < since) continue;
        const peer = matchPeer(item.spec?.agentNetwork?.access, event.content?.agent);
        if (!peer) continue;
        const key = `${item.metadata.name}->${peer.url ? `${EXTERNAL}/${peer.url}` : `Agent/${peer.name}`}`;
        const perNs = counts.get(namespace) || counts.set(namespace, new Map()).get(namespace);
        perNs.set(key, (perNs.get(key) || 0) + 1);
      }
    } catch (error) {
      if (error.name === 'AbortError') throw error;  // an agent that does not answer has no recent delegations to show
    }
  }));
  return counts;
}

export function render(main) {
  const body = h('div');
  const status = h('p', { class: 'hint', 'aria-live': 'polite' });
  replace(main,
    h('h1', {}, 'Network graph'),
    h('p', { class: 'muted' }, 'Agents, the peers they may delegate to (KAOS agents, or A2A agents elsewhere by URL), their MCP servers and model APIs. Select a node to open it.'),
    h('ul', { class: 'legend' },
      h('li', {}, badge({ state: 'ready', label: 'Ready' })), h('li', {}, badge({ state: 'waiting', label: 'Starting or waiting' })),
      h('li', {}, badge({ state: 'down', label: 'Down, failed or not found' })),
      h('li', {}, svg('svg', { width: 30, height: 14, viewBox: '0 0 30 14', 'aria-hidden': 'true' },
        svg('rect', { x: 1, y: 1, width: 28, height: 12, rx: 6, fill: EXTERNAL_FILL, stroke: EXTERNAL_STROKE, 'stroke-width': 1.5 })),
      ' A2A agent outside KAOS, by URL (state not known)'),
      h('li', {}, '—— may delegate to'), h('li', {}, '- - - uses tools of'), h('li', {}, '· · · uses model API'),
      h('li', {}, h('span', { class: 'state-recent' }, `thick purple: delegated in the last ${RECENT_MINUTES} minutes`))),
    body, status);
  let recent = new Map();
  let last = '';
  let items = [];  // those the person is shown (access.js)
  let all = [];
  const controller = new AbortController();
  const paint = () => {
    const signature = JSON.stringify([items.map((item) => [store.key(item), item.health?.state, item.spec]), [...recent].map(([ns, m]) => [ns, [...m]])]);
    if (signature === last) return;
    last = signature;
    const spaces = store.namespaces();
    if (!spaces.length) { replace(body, h('p', {}, 'No resources yet: nothing to draw.')); return; }
    replace(body, spaces.map((namespace) => {
      const graphModel = model(items, namespace, all);
      const perNs = recent.get(namespace) || new Map();
      return h('section', { 'aria-labelledby': `graph-${namespace}`, 'data-namespace': namespace },
        h('h2', { id: `graph-${namespace}` }, `Namespace ${namespace}`),
        h('div', { class: 'graph-wrap' }, draw(namespace, graphModel, perNs)),
        connections(namespace, graphModel, perNs));
    }));
  };
  const unsubscribe = store.subscribe((state) => {
    if (!state.loaded) return;
    all = state.items;
    items = shownTo(all);
    paint();
  });
  let timer = null;
  const refreshDelegations = async () => {
    try {
      recent = await recentDelegations(items, controller.signal);
      status.textContent = `Delegations read from the agents' memory at ${new Date().toLocaleTimeString()}.`;
      paint();
    } catch (error) {
      if (error.name === 'AbortError') return;
      status.textContent = `Recent delegations could not be read: ${error.message}`;
    }
    timer = setTimeout(refreshDelegations, 3000);
  };
  const first = store.subscribe((state) => { if (state.loaded && timer === null) { timer = 0; refreshDelegations(); } });
  return () => { unsubscribe(); first(); controller.abort(); clearTimeout(timer); };
}
