// Agent page: its card (description, capabilities, tools with their input schemas), its
// resource, and a chat that streams the answer, keeps the session across turns (the id the
// agent returns) and shows each turn's steps from the memory events.

import { badge, h, pageHead, panel, pretty, replace } from '../dom.js';
import { ApiError, getJSON, streamChat, workloadPath } from '../api.js';
import { decisionControls, outcome, timeLeft } from '../approvals.js';
import { cardUrl, isPeerUrl, matchPeer, splitAccess } from '../peers.js';
import * as store from '../store.js';
import { stepsList, turnEvents } from './steps.js';

function sessionKey(namespace, name) { return `kaos-console:session:${namespace}/${name}`; }

// A peer that is an A2A agent outside KAOS: a link to its agent card (the URL is not a page here).
function externalPeer(url, text = url) {
  return h('a', { href: cardUrl(url), target: '_blank', rel: 'noopener noreferrer', 'data-peer-url': url,
    title: `A2A agent outside KAOS at ${url}: opens its agent card in a new tab` }, text);
}

// An access entry: the page of the Agent it names, or the card of the A2A agent its URL names.
function accessEntry(namespace, entry) {
  if (isPeerUrl(entry)) return [externalPeer(entry), h('span', { class: 'muted' }, ' (A2A agent outside KAOS)')];
  return h('a', { href: `#/agent/${encodeURIComponent(namespace)}/${encodeURIComponent(entry)}`, 'data-peer': entry }, entry);
}

function statusBlock(item) {
  if (!item) return h('p', { class: 'error' }, 'This agent is not in the resource list (deleted, or not applied yet).');
  const status = item.status || {};
  return h('dl', { class: 'facts' },
    h('dt', {}, 'Status'), h('dd', {}, badge(item.health), ' ', h('span', { class: 'muted' }, item.health?.state === 'ready' ? '' : (item.health?.detail || status.message || ''))),
    h('dt', {}, 'Endpoint'), h('dd', { class: 'mono' }, status.endpoint || '—'),
    h('dt', {}, 'Model'), h('dd', {}, `${item.spec?.model || '(from its ModelAPI)'} via `, h('a', { href: `#/modelapi/${encodeURIComponent(item.metadata.namespace || 'default')}/${encodeURIComponent(item.spec?.modelAPI)}` }, item.spec?.modelAPI)),
    h('dt', {}, 'MCP servers'), h('dd', {}, (item.spec?.mcpServers || []).length
      ? (item.spec.mcpServers).flatMap((s, i) => [i ? ', ' : '', h('a', { href: `#/mcp/${encodeURIComponent(item.metadata.namespace || 'default')}/${encodeURIComponent(s)}` }, s)]) : 'none'),
    h('dt', {}, 'May delegate to'), h('dd', {}, (item.spec?.agentNetwork?.access || []).length
      ? item.spec.agentNetwork.access.flatMap((s, i) => [i ? ', ' : '', accessEntry(item.metadata.namespace || 'default', s)]) : 'no one'));
}

function cardBlock(card) {
  const skills = card.skills || [];
  return [
    h('p', {}, card.description || h('span', { class: 'muted' }, 'No description.')),
    h('h3', {}, 'Capabilities'),
    h('ul', { class: 'tags', 'aria-label': 'Capabilities' }, (card.capabilities || []).map((c) => h('li', {}, c))),
    h('h3', {}, `Tools (${skills.length})`),
    skills.length ? h('table', { class: 'skills' },
      h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Tool'), h('th', { scope: 'col' }, 'Description'), h('th', { scope: 'col' }, 'Input schema'))),
      h('tbody', {}, skills.map((skill) => h('tr', { 'data-skill': skill.name },
        h('th', { scope: 'row' }, h('code', {}, skill.name)), h('td', {}, skill.description || ''),
        h('td', {}, h('details', {}, h('summary', {}, 'Show'), h('pre', {}, pretty(skill.inputSchema || {})))))))) :
      h('p', { class: 'muted' }, 'This agent has no tools.'),
  ];
}

export function render(main, namespace, name) {
  const controller = new AbortController();
  const status = h('div');
  const card = h('div', { 'aria-live': 'polite' }, h('p', { class: 'muted' }, 'Reading the agent card…'));
  const spec = h('pre', { 'aria-label': 'Resource spec' });
  const log = h('ol', { class: 'chat-log', role: 'log', 'aria-live': 'polite', 'aria-label': 'Conversation' });
  const input = h('textarea', { id: 'chat-input', name: 'message', rows: '3', required: true,
    placeholder: 'Ask the agent something. Enter sends, Shift+Enter adds a line.' });
  const send = h('button', { type: 'submit' }, 'Send');
  const sessionLine = h('span', { class: 'hint', 'data-session': '' });
  const problem = h('p', { class: 'error', role: 'alert' });
  let sessionId = sessionStorage.getItem(sessionKey(namespace, name)) || null;
  const showSession = () => {
    sessionLine.dataset.session = sessionId || '';
    sessionLine.textContent = sessionId ? `Session ${sessionId}: each turn continues it.` : 'A new session starts with the next message.';
  };
  showSession();
  const newSession = h('button', { type: 'button', class: 'secondary', onclick: () => {
    sessionId = null; sessionStorage.removeItem(sessionKey(namespace, name)); showSession(); log.replaceChildren(); input.focus();
  } }, 'New session');
  // A peer in a delegation step: an Agent's page, or the card of the A2A agent it is matched to;
  // an A2A agent's name that cannot be told which URL it is stays text.
  const peerLink = (peer) => {
    const access = store.find('Agent', namespace, name)?.spec?.agentNetwork?.access;
    const match = matchPeer(access, peer);
    if (match?.url) return externalPeer(match.url, peer);
    if (!match && splitAccess(access).urls.length) return h('span', { 'data-peer': peer }, peer, h('span', { class: 'muted' }, ' (A2A agent)'));
    return h('a', { href: `#/agent/${encodeURIComponent(namespace)}/${encodeURIComponent(peer)}` }, peer);
  };

  // A tool call of this turn waiting for a person: what waits, the time left, and the controls to
  // decide it here (or on the approvals page). settle(words) once it no longer waits; the outcome
  // of a decision made here replaces what the stream said first (it may go on before the POST returns).
  function waitingNotice(approval) {
    const holder = approval.peer || name;
    const held = { key: `${namespace}/${holder}/${approval.id}`, namespace, holder, via: name, approval };
    const left = h('span', { class: 'nowrap' });
    const state = h('span', {});
    const controls = decisionControls(held, (updated) => settle(outcome(updated), true));
    const notice = h('div', { class: 'approval-wait', role: 'status', 'data-approval-wait': approval.id },
      h('p', {}, h('strong', {}, 'Waiting for approval: '), h('code', {}, approval.tool),
        holder !== name ? ` (in ${holder})` : '', ', ', left, ' left. ', state,
        h('a', { href: '#/approvals' }, 'All pending approvals')),
      h('pre', { class: 'arguments' }, pretty(approval.arguments ?? {})), controls);
    const tick = () => { left.textContent = timeLeft(approval.expires_at) || 'unknown time'; };
    tick();
    const timer = setInterval(tick, 1000);
    function settle(words, known = false) {
      if (notice.dataset.settled !== undefined && !known) return;
      clearInterval(timer);
      notice.dataset.settled = words;
      replace(notice.firstChild, h('strong', {}, 'Approval: '), h('code', {}, approval.tool), ` ${words}.`);
      controls.remove();
    }
    return { notice, settle };
  }

  async function turn(text) {
    problem.className = 'error';
    problem.textContent = '';
    log.append(h('li', { class: 'msg user' }, h('div', { class: 'who' }, 'You'), h('div', { class: 'text' }, text)));
    const answer = h('div', { class: 'text', 'data-answer': '' });
    const message = h('li', { class: 'msg assistant', 'aria-busy': 'true', 'data-turn': '' }, h('div', { class: 'who' }, name), answer);
    log.append(message);
    log.scrollTop = log.scrollHeight;
    send.disabled = true;
    const waits = [];
    const settleAll = (words) => { for (const wait of waits) wait.settle(words); };
    try {
      const result = await streamChat(namespace, name, text, sessionId, (delta) => {
        settleAll('decided: the answer goes on');
        answer.textContent += delta;
        log.scrollTop = log.scrollHeight;
      }, controller.signal, (approval) => {
        const wait = waitingNotice(approval);
        waits.push(wait);
        message.append(wait.notice);
        log.scrollTop = log.scrollHeight;
      });
      settleAll('decided');
      if (result.sessionId) { sessionId = result.sessionId; sessionStorage.setItem(sessionKey(namespace, name), sessionId); }
      showSession();
      message.dataset.done = 'true';
      message.setAttribute('aria-busy', 'false');
      try {
        const memory = await getJSON(workloadPath('Agent', namespace, name, `/memory/events?session_id=${encodeURIComponent(sessionId)}&limit=500`),
          `The memory of ${name}`, { signal: controller.signal });
        message.append(stepsList(turnEvents(memory.events || [], text), peerLink));
      } catch (error) {
        if (error.name !== 'AbortError') message.append(h('p', { class: 'hint' }, `The steps of this turn could not be read: ${error.message}`));
      }
    } catch (error) {
      settleAll('no longer waits: the answer stopped');
      if (error.name === 'AbortError') return;
      message.setAttribute('aria-busy', 'false');
      message.classList.add('failed');
      message.dataset.done = 'error';
      if (!answer.textContent) answer.textContent = error instanceof ApiError ? error.message : `The chat failed: ${error.message}`;
      problem.className = error.status === 403 ? 'denied' : 'error';
      problem.textContent = error.message;
    } finally {
      send.disabled = false;
      log.scrollTop = log.scrollHeight;
    }
  }

  const form = h('form', { 'aria-label': `Chat with ${name}`, onsubmit: (event) => {
    event.preventDefault();
    const text = input.value.trim();
    if (!text) { problem.textContent = 'Type a message first.'; input.focus(); return; }
    if (send.disabled) return;
    input.value = '';
    turn(text);
  } },
  h('label', { for: 'chat-input' }, `Message to ${name}`), input,
  h('div', { class: 'actions' }, send, newSession, sessionLine), problem);
  input.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) { event.preventDefault(); form.requestSubmit(); }
  });

  replace(main, pageHead(namespace, 'agent', `Agent ${name}`),
    h('p', {}, h('a', { href: `#/memory/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}` }, `Memory of ${name}: sessions and events`)),
    h('div', { class: 'grid' },
      panel('about', 'Agent card', status, card, h('h3', {}, 'Resource'), h('details', {}, h('summary', {}, 'Spec'), spec)),
      panel('chat', 'Chat',
        h('p', { class: 'hint' }, 'Answers stream in as the agent writes them; the steps (tool calls, delegations, errors) come from its memory.'),
        log, form)));

  const unsubscribe = store.watch('Agent', namespace, name, (item) => {
    replace(status, statusBlock(item));
    spec.textContent = item ? pretty(item.spec || {}) : '';
  });

  (async () => {
    try {
      const payload = await getJSON(workloadPath('Agent', namespace, name, '/.well-known/agent'), `The agent card of ${name}`, { signal: controller.signal });
      replace(card, cardBlock(payload));
    } catch (error) {
      if (error.name === 'AbortError') return;
      replace(card, h('p', { class: 'error' }, error.message),
        h('p', { class: 'hint' }, 'The card comes from the running agent; it shows once the agent is Ready. Reload the page to try again.'));
    }
  })();

  return () => { controller.abort(); unsubscribe(); };
}
