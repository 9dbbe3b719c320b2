// Trigger page: what it sends to which agent and when, its status, the runs in progress and its
// run history; each run links to its session's timeline in the agent's memory.

import { badge, h, pageHead, panel, pretty, replace, time } from '../dom.js';
import * as store from '../store.js';

function sessionLink(namespace, agent, session) {
  if (!session) return '—';
  return h('a', { href: `#/memory/${[namespace, agent].map(encodeURIComponent).join('/')}/session/${encodeURIComponent(session)}`,
    'data-session-link': session }, session);
}

function runRow(namespace, agent, run) {
  return h('tr', { 'data-run': run.runId, 'data-outcome': run.outcome || 'Running' },
    h('td', { class: 'mono' }, run.runId),
    h('td', {}, run.source || ''),
    h('td', {}, run.outcome || 'Running'),
    h('td', {}, h('time', { datetime: run.startTime }, time(run.startTime))),
    h('td', {}, run.endTime ? h('time', { datetime: run.endTime }, time(run.endTime)) : '—'),
    h('td', {}, run.tokens ?? '—'),
    h('td', {}, sessionLink(namespace, agent, run.sessionId)),
    h('td', { class: 'message' }, run.summary || ''));
}

export function render(main, namespace, name) {
  const facts = h('div');
  const runs = h('div');
  replace(main, pageHead(namespace, 'trigger', `Trigger ${name}`),
    panel('trigger-status', 'Status', facts), panel('trigger-runs', 'Runs', runs));

  const unsubscribe = store.watch('Trigger', namespace, name, (item) => {
    if (!item) { replace(facts, h('p', { class: 'error' }, 'This trigger is not in the resource list.')); replace(runs); return; }
    const spec = item.spec || {};
    const status = item.status || {};
    const agentLink = h('a', { href: `#/agent/${encodeURIComponent(namespace)}/${encodeURIComponent(spec.agent)}` }, spec.agent);
    replace(facts, h('dl', { class: 'facts' },
      h('dt', {}, 'Status'), h('dd', {}, badge(item.health), ' ', h('span', { class: 'muted' }, item.health?.detail || '')),
      h('dt', {}, 'Agent'), h('dd', {}, agentLink),
      h('dt', {}, 'When'), h('dd', {}, spec.schedule ? `schedule ${spec.schedule} (${spec.timeZone || 'UTC'})`
        : `webhook: POST /${namespace}/trigger/${name}, signed`),
      h('dt', {}, 'Next run'), h('dd', { 'data-next-run': status.nextRun || '' }, status.nextRun ? h('time', { datetime: status.nextRun }, new Date(status.nextRun).toLocaleString()) : '—'),
      h('dt', {}, 'Last due time'), h('dd', {}, status.lastRun ? new Date(status.lastRun).toLocaleString() : '—'),
      h('dt', {}, 'Message'), h('dd', {}, h('pre', {}, spec.message || '')),
      h('dt', {}, 'Session'), h('dd', {}, spec.session === 'new' ? 'a new session per run' : `always ${spec.session}`),
      h('dt', {}, 'Concurrency'), h('dd', {}, spec.concurrencyPolicy || 'Forbid'),
      h('dt', {}, 'Limits'), h('dd', {}, pretty(spec.limits || {}))));
    const entries = [...(status.active || []), ...[...(status.history || [])].reverse()];
    replace(runs, entries.length
      ? h('table', {}, h('caption', { class: 'muted' }, 'Newest first; a run links to its session in the agent\'s memory.'),
        h('thead', {}, h('tr', {}, ['Run', 'Source', 'Outcome', 'Started', 'Ended', 'Tokens', 'Session', 'Answer or error'].map((c) => h('th', { scope: 'col' }, c)))),
        h('tbody', {}, entries.map((run) => runRow(namespace, spec.agent, run))))
      : h('p', { class: 'muted' }, 'No run yet.'));
  });
  return () => unsubscribe();
}
