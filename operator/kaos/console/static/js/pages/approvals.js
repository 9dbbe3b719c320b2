// Approvals: the tool calls waiting for a person in every Ready agent, with the tool, its
// arguments, the session and the time left, approved or rejected here with a reason. Rows are
// kept by key across polls, so a reason being typed survives the refresh.

import { h, pretty, replace, time } from '../dom.js';
import { decisionControls, heldApprovals, listApprovals, outcome, timeLeft } from '../approvals.js';
import * as store from '../store.js';

const REFRESH_MS = 2000;

function sessionLink(namespace, agent, session) {
  if (!session) return h('span', { class: 'muted' }, '—');
  return h('a', { href: `#/memory/${encodeURIComponent(namespace)}/${encodeURIComponent(agent)}/session/${encodeURIComponent(session)}`,
    class: 'mono', title: `The memory of ${agent} for session ${session}` }, session);
}

function agentCell(held) {
  const link = (name) => h('a', { href: `#/agent/${encodeURIComponent(held.namespace)}/${encodeURIComponent(name)}` }, name);
  return [link(held.holder), held.via !== held.holder ? h('span', { class: 'muted' }, ' via ', link(held.via)) : null,
    h('div', { class: 'hint' }, held.namespace)];
}

export function render(main) {
  const controller = new AbortController();
  const everything = h('input', { type: 'checkbox', id: 'approvals-all' });
  const count = h('p', { class: 'hint', 'aria-live': 'polite', id: 'approvals-count' });
  const problems = h('ul', { class: 'plain', 'aria-label': 'Agents that could not be asked' });
  const body = h('tbody');
  const table = h('table', { class: 'approvals' },
    h('thead', {}, h('tr', {}, ['Agent', 'Tool', 'Arguments', 'Session', 'Requested', 'Time left', 'Decision']
      .map((c) => h('th', { scope: 'col' }, c)))), body);
  const rows = new Map();  // key -> { row, status, left, decision }
  let timer = null;
  let ticker = null;

  const decided = (entry, approval, here = false) => {
    entry.decidedHere ||= here;
    entry.held.approval = approval;
    entry.row.dataset.status = approval.status;
    entry.status = approval.status;
    replace(entry.decision, h('span', { 'data-outcome': approval.status }, outcome(approval)));
    replace(entry.left, '—');
  };

  const rowFor = (held) => {
    const { approval } = held;
    const left = h('td', { class: 'nowrap', 'data-expires': approval.expires_at || '' });
    const decision = h('td', {});
    const row = h('tr', { 'data-approval': held.key, 'data-status': approval.status },
      h('td', {}, agentCell(held)),
      h('th', { scope: 'row' }, h('code', {}, approval.tool)),
      h('td', {}, h('pre', { class: 'arguments' }, pretty(approval.arguments ?? {}))),
      h('td', {}, sessionLink(held.namespace, held.holder, approval.session_id)),
      h('td', { class: 'nowrap' }, h('time', { datetime: approval.requested_at || '' }, time(approval.requested_at))),
      left, decision);
    return { held, row, left, decision, status: null, decidedHere: false };
  };

  const show = (entry) => {
    const { approval } = entry.held;
    if (entry.status === approval.status) return;
    entry.status = approval.status;
    entry.row.dataset.status = approval.status;
    if (approval.status === 'pending') {
      replace(entry.decision, decisionControls(entry.held, (updated) => decided(entry, updated, true)));
    } else {
      decided(entry, approval);
    }
  };

  const tick = () => {
    const now = Date.now();
    for (const entry of rows.values()) {
      if (entry.status === 'pending') entry.left.textContent = timeLeft(entry.held.approval.expires_at, now) || '—';
    }
  };

  let generation = 0;
  const refresh = async () => {
    clearTimeout(timer);
    const mine = ++generation;
    const agents = store.state.items.filter((item) => item.kind === 'Agent' && item.status?.ready);
    const failed = [];
    const listings = await Promise.all(agents.map(async (item) => {
      const namespace = item.metadata.namespace || 'default';
      try {
        return { namespace, agent: item.metadata.name, approvals: await listApprovals(namespace, item.metadata.name, everything.checked, controller.signal) };
      } catch (error) {
        if (error.name !== 'AbortError') failed.push(error);
        return null;
      }
    }));
    if (controller.signal.aborted || mine !== generation) return;  // left, or a newer refresh runs
    const held = heldApprovals(listings.filter(Boolean));
    const keys = new Set(held.map((item) => item.key));
    for (const [key, entry] of rows) {
      // A call decided on this page keeps its row (and its outcome) while the page is open.
      if (!keys.has(key) && !entry.decidedHere) { entry.row.remove(); rows.delete(key); }
    }
    for (const item of held) {
      let entry = rows.get(item.key);
      if (!entry) { entry = rowFor(item); rows.set(item.key, entry); }
      else entry.held.approval = item.approval;
      body.append(entry.row);  // keeps the order of requests (appending moves an existing row)
      show(entry);
    }
    tick();
    const pending = held.filter((item) => item.approval.status === 'pending').length;
    count.textContent = `${pending} call${pending === 1 ? '' : 's'} waiting for a decision`
      + `${everything.checked ? `, ${held.length - pending} decided or expired` : ''}; ${agents.length} Ready agent${agents.length === 1 ? '' : 's'} asked.`;
    table.hidden = !rows.size;
    replace(problems, failed.map((error) => h('li', { class: error.status === 403 ? 'denied' : 'error', 'data-denied': error.denied || undefined }, error.message)));
    timer = setTimeout(refresh, REFRESH_MS);
  };

  everything.addEventListener('change', refresh);
  replace(main,
    h('h1', {}, 'Approvals'),
    h('p', { class: 'muted' }, 'Tool calls that wait for a person before they run (an Agent\'s spec.approval). ',
      'Approve one and it runs; reject it and the model reads your reason as the tool\'s answer. ',
      'Unanswered, a call follows its agent\'s onTimeout when the time left runs out.'),
    h('div', { class: 'actions' }, everything, h('label', { for: 'approvals-all', class: 'inline' }, 'Show decided and expired calls too')),
    count, problems, table);

  let started = false;
  const unsubscribe = store.subscribe((state) => {
    if (state.loaded && !started) { started = true; refresh(); }
  });
  ticker = setInterval(tick, 1000);
  return () => { controller.abort(); clearTimeout(timer); clearInterval(ticker); unsubscribe(); };
}
