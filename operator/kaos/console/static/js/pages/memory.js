// Memory: an agent's sessions and its event timeline, filterable by session and event type.

import { h, pretty, replace, time } from '../dom.js';
import { getJSON, workloadPath } from '../api.js';
import * as store from '../store.js';
import { shownTo } from '../access.js';

export const EVENT_TYPES = ['user_message', 'task_delegation_received', 'tool_call', 'tool_result', 'delegation_request',
  'delegation_response', 'delegation_error', 'approval_requested', 'approval_granted', 'approval_rejected',
  'approval_expired', 'context_compacted', 'agent_response', 'error'];
const REFRESH_MS = 3000;

function option(value, label, selected) {
  return h('option', { value, selected: selected || undefined }, label);
}

function eventItem(event, pick) {
  const session = event.metadata?.session_id || '';
  const meta = { ...(event.metadata || {}) };
  delete meta.session_id;
  return h('li', { 'data-event-type': event.event_type, 'data-session': session },
    h('span', { class: 'when' }, h('time', { datetime: event.timestamp }, time(event.timestamp))),
    h('span', { class: `type type-${event.event_type}` }, event.event_type), ' ',
    h('button', { type: 'button', class: 'secondary', 'aria-label': `Show only session ${session}`, onclick: () => pick(session) }, `session ${session.replace(/^session-/, "").slice(0, 8)}`),
    h('pre', {}, pretty(event.content)),
    Object.keys(meta).length ? h('p', { class: 'hint' }, `metadata: ${JSON.stringify(meta)}`) : null);
}

export function render(main, namespace, name, session) {
  const controller = new AbortController();
  const agentSelect = h('select', { id: 'memory-agent' });
  const sessionSelect = h('select', { id: 'memory-session' }, option('', 'All sessions'), session ? option(session, session, true) : null);
  const typeSelect = h('select', { id: 'memory-type' }, option('', 'All event types'), EVENT_TYPES.map((t) => option(t, t)));
  const limitSelect = h('select', { id: 'memory-limit' }, [50, 100, 500].map((n) => option(String(n), `newest ${n}`, n === 100)));
  const live = h('input', { type: 'checkbox', id: 'memory-live', checked: true });
  const count = h('p', { class: 'hint', 'aria-live': 'polite', id: 'memory-count' });
  const problem = h('p', { class: 'error', role: 'alert' });
  const timeline = h('ol', { class: 'timeline', 'aria-label': 'Events, oldest first' });
  let selected = namespace && name ? `${namespace}/${name}` : '';
  let timer = null;
  let last = '';

  const refresh = async () => {
    clearTimeout(timer);
    if (!selected) {
      replace(timeline);
      count.textContent = 'Choose an agent to read its memory.';
      return;
    }
    const [ns, agent] = selected.split('/');
    const params = new URLSearchParams({ limit: limitSelect.value });
    if (sessionSelect.value) params.set('session_id', sessionSelect.value);
    if (typeSelect.value) params.set('event_type', typeSelect.value);
    try {
      const [sessions, events] = await Promise.all([
        getJSON(workloadPath('Agent', ns, agent, '/memory/sessions'), `The memory of ${agent}`, { signal: controller.signal }),
        getJSON(workloadPath('Agent', ns, agent, `/memory/events?${params}`), `The memory of ${agent}`, { signal: controller.signal }),
      ]);
      problem.textContent = '';
      problem.className = 'error';
      const known = [...(sessions.sessions || [])].reverse();  // most recently active first
      const current = sessionSelect.value;
      if (JSON.stringify(known) !== JSON.stringify([...sessionSelect.options].slice(1).map((o) => o.value))) {
        replace(sessionSelect, option('', 'All sessions'),
          known.map((id) => option(id, id, id === current)),
          current && !known.includes(current) ? option(current, `${current} (not stored)`, true) : null);
      }
      const signature = JSON.stringify([params.toString(), events.total, (events.events || []).map((e) => e.event_id)]);
      if (signature !== last) {
        last = signature;
        const shown = events.events || [];
        count.textContent = `${shown.length} of ${events.total} matching event${events.total === 1 ? '' : 's'} shown (${known.length} session${known.length === 1 ? '' : 's'} stored).`;
        replace(timeline, shown.length ? shown.map((event) => eventItem(event, (session) => { sessionSelect.value = session; refresh(); }))
          : h('li', { class: 'muted' }, 'No events match.'));
      }
    } catch (error) {
      if (error.name === 'AbortError') return;
      problem.className = error.status === 403 ? 'denied' : 'error';
      problem.textContent = error.message;
    }
    if (live.checked) timer = setTimeout(refresh, REFRESH_MS);
  };

  const fillAgents = (state) => {
    const agents = shownTo(state.items).filter((item) => item.kind === 'Agent').map((item) => `${item.metadata.namespace || 'default'}/${item.metadata.name}`);
    const values = [...agentSelect.options].map((o) => o.value).filter(Boolean);
    if (JSON.stringify(values) === JSON.stringify(agents)) return;
    replace(agentSelect, option('', 'Choose an agent'), agents.map((id) => option(id, id, id === selected)));
    // The agent of the address: not found, or not offered to this person (they may still read it).
    const missing = selected && !store.find('Agent', ...selected.split('/'));
    if (selected && !agents.includes(selected)) agentSelect.append(option(selected, `${selected}${missing ? ' (not found)' : ''}`, true));
  };

  agentSelect.addEventListener('change', () => {
    selected = agentSelect.value;
    sessionSelect.value = '';
    last = '';
    history.replaceState(null, '', selected ? `#/memory/${selected.split('/').map(encodeURIComponent).join('/')}` : '#/memory');
    refresh();
  });
  for (const select of [sessionSelect, typeSelect, limitSelect]) select.addEventListener('change', () => { last = ''; refresh(); });
  live.addEventListener('change', () => { if (live.checked) refresh(); else clearTimeout(timer); });

  replace(main,
    h('p', { class: 'crumbs' }, h('a', { href: '#/' }, 'Overview'), name ? [' › ', h('a', { href: `#/agent/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}` }, `agent ${name}`)] : null),
    h('h1', {}, name ? `Memory of ${name}` : 'Memory'),
    h('p', { class: 'muted' }, 'What an agent recorded: its sessions and every event, oldest first. Filter by session and event type.'),
    h('form', { class: 'row', 'aria-label': 'Filters', onsubmit: (event) => { event.preventDefault(); refresh(); } },
      h('div', {}, h('label', { for: 'memory-agent' }, 'Agent'), agentSelect),
      h('div', {}, h('label', { for: 'memory-session' }, 'Session'), sessionSelect),
      h('div', {}, h('label', { for: 'memory-type' }, 'Event type'), typeSelect),
      h('div', {}, h('label', { for: 'memory-limit' }, 'How many'), limitSelect),
      h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Refresh'),
        live, h('label', { for: 'memory-live', class: 'inline' }, 'Follow live'))),
    problem, count, timeline);

  const unsubscribe = store.subscribe((state) => { if (state.loaded) fillAgents(state); });
  refresh();
  return () => { controller.abort(); clearTimeout(timer); unsubscribe(); };
}
