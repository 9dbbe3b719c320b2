// The steps of a chat turn, from the agent's memory events: tool calls with their arguments and
// results, delegations with the peer's answer, approvals asked and decided, errors.

import { h, pretty } from '../dom.js';

const STEP_TYPES = new Set(['tool_call', 'tool_result', 'delegation_request', 'delegation_response', 'delegation_error', 'error',
  'approval_requested', 'approval_granted', 'approval_rejected', 'approval_expired']);
const DECIDED = { approval_granted: 'approved', approval_rejected: 'rejected', approval_expired: 'expired' };

// The events of the turn that starts with the last user_message of `text` in the session.
export function turnEvents(events, text) {
  let start = -1;
  for (let i = events.length - 1; i >= 0; i--) {
    if (events[i].event_type === 'user_message' && (text === undefined || events[i].content === text)) { start = i; break; }
  }
  if (start < 0) return [];
  const rest = events.slice(start + 1);
  const end = rest.findIndex((event) => event.event_type === 'user_message' || event.event_type === 'agent_response');
  return end < 0 ? rest : rest.slice(0, end + 1);
}

function describe(event, peerLink) {
  const c = event.content || {};
  switch (event.event_type) {
    case 'tool_call':
      return [h('span', { class: 'step-kind' }, `Tool call ${c.tool}`), ' with arguments ', h('code', {}, JSON.stringify(c.arguments ?? {}))];
    case 'tool_result':
      return [h('span', { class: 'step-kind' }, `Tool result of ${c.tool}`), ': ', h('code', {}, pretty(c.result))];
    case 'delegation_request':
      return [h('span', { class: 'step-kind' }, 'Delegation to '), peerLink(c.agent), ': ', c.task];
    case 'delegation_response':
      return [h('span', { class: 'step-kind' }, 'Answer of '), peerLink(c.agent), ': ', h('span', { class: 'peer-answer' }, pretty(c.response))];
    case 'delegation_error':
      return [h('span', { class: 'step-kind' }, 'Delegation to '), peerLink(c.agent), ' failed: ', c.error || pretty(c)];
    case 'approval_requested':
      return [h('span', { class: 'step-kind' }, `Approval asked for ${c.tool}`), ` (${c.approval_id}) with arguments `, h('code', {}, JSON.stringify(c.arguments ?? {}))];
    case 'approval_granted': case 'approval_rejected': case 'approval_expired':
      return [h('span', { class: 'step-kind' }, `Approval ${c.approval_id} ${DECIDED[event.event_type]}`),
        c.decided_by ? ` by ${c.decided_by}` : '', c.reason ? `: ${c.reason}` : ''];
    case 'error':
      return [h('span', { class: 'step-kind' }, 'Error'), ': ', typeof c === 'string' ? c : (c.error ? `${c.tool ? `${c.tool}: ` : ''}${c.error}` : pretty(c))];
    default:
      return [h('span', { class: 'step-kind' }, event.event_type), ': ', pretty(c)];
  }
}

export function stepsList(events, peerLink) {
  const steps = events.filter((event) => STEP_TYPES.has(event.event_type));
  const cls = (type) => (type.includes('error') || type === 'approval_rejected' ? 'step-error'
    : type.startsWith('delegation') ? 'step-delegation' : type.startsWith('approval') ? 'step-approval' : 'step-tool');
  return h('details', { class: 'steps', open: steps.length > 0 },
    h('summary', {}, steps.length ? `Steps of this turn (${steps.length})` : 'No tool calls or delegations in this turn'),
    steps.length ? h('ol', {}, steps.map((event) => h('li', { class: cls(event.event_type), 'data-step': event.event_type },
      describe(event, peerLink)))) : null);
}
