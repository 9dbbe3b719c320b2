// Approvals: tool calls waiting for a person's decision in the agents (GET /approvals and
// POST /approvals/{id} on each agent, docs/approvals.md), with their time left and the controls
// to approve or reject them with a reason: the approvals page and a waiting chat use them.

import { ApiError, getJSON, postJSON, workloadPath } from './api.js';
import { h } from './dom.js';

// "4m 05s" until expiresAt (ISO 8601), "2h 30m" when longer, "expired" once past, "" when unknown.
export function timeLeft(expiresAt, now = Date.now()) {
  const end = Date.parse(expiresAt || '');
  if (Number.isNaN(end)) return '';
  const seconds = Math.floor((end - now) / 1000);
  if (seconds <= 0) return 'expired';
  const hours = Math.floor(seconds / 3600);
  const minutes = Math.floor((seconds % 3600) / 60);
  const pad = (n) => String(n).padStart(2, '0');
  return hours ? `${hours}h ${pad(minutes)}m` : `${minutes}m ${pad(seconds % 60)}s`;
}

export async function listApprovals(namespace, name, everything, signal) {
  const query = `/approvals?status=${everything ? 'all' : 'pending'}`;
  const payload = await getJSON(workloadPath('Agent', namespace, name, query), `The approvals of ${name}`, { signal });
  return payload.approvals || [];
}

// Each approval once, as { namespace, holder, via, approval }: holder is the agent whose call waits,
// via the agent a decision goes to. A coordinator lists its peers' calls too (entries with peer):
// one its peer lists as well is the peer's own.
export function heldApprovals(listings) {
  const own = new Set();
  for (const { namespace, agent, approvals } of listings) {
    for (const approval of approvals) if (!approval.peer) own.add(`${namespace}/${agent}/${approval.id}`);
  }
  const seen = new Set();
  const held = [];
  for (const { namespace, agent, approvals } of listings) {
    for (const approval of approvals) {
      const holder = approval.peer || agent;
      const key = `${namespace}/${holder}/${approval.id}`;
      if (seen.has(key) || (approval.peer && own.has(key))) continue;
      seen.add(key);
      held.push({ key, namespace, holder, via: agent, approval });
    }
  }
  return held.sort((a, b) => String(a.approval.requested_at || '').localeCompare(String(b.approval.requested_at || '')));
}

export async function decide(held, decision, reason) {
  const { namespace, via, holder, approval } = held;
  const path = workloadPath('Agent', namespace, via, `/approvals/${encodeURIComponent(approval.id)}`);
  try {
    const { payload } = await postJSON(path, { decision, reason }, `The approval ${approval.id} of ${holder}`);
    return payload;
  } catch (error) {
    if (error instanceof ApiError && error.status === 409) {
      throw new ApiError(`The call ${approval.tool} of ${holder} was already decided or has expired; `
        + `nothing changed (${error.message})`, 409);
    }
    throw error;
  }
}

// A reason field and the Approve and Reject buttons of one pending call. onDecided(approval) after
// the agent took the decision; a refusal is shown beside the buttons, which stay usable.
export function decisionControls(held, onDecided) {
  const { approval, holder } = held;
  const id = `reason-${held.key.replace(/[^A-Za-z0-9_-]/g, '_')}`;
  const reason = h('input', { type: 'text', id, name: 'reason', autocomplete: 'off',
    placeholder: 'Reason (optional; a rejection tells the model why)' });
  const problem = h('p', { class: 'error', role: 'alert' });
  const buttons = [];
  const act = async (decision) => {
    problem.textContent = '';
    for (const button of buttons) button.disabled = true;
    try {
      onDecided(await decide(held, decision, reason.value.trim()));
    } catch (error) {
      problem.className = error.status === 403 ? 'denied' : 'error';  // a refusal: what this person may not do
      problem.textContent = error.message;
      for (const button of buttons) button.disabled = false;
    }
  };
  const what = `${approval.tool} of ${holder}`;
  buttons.push(
    h('button', { type: 'button', 'data-decision': 'approve', 'aria-label': `Approve ${what}`, onclick: () => act('approve') }, 'Approve'),
    h('button', { type: 'button', class: 'danger', 'data-decision': 'reject', 'aria-label': `Reject ${what}`, onclick: () => act('reject') }, 'Reject'));
  return h('div', { class: 'decision' },
    h('label', { for: id, class: 'visually-hidden' }, `Reason for ${what}`), reason,
    h('div', { class: 'actions' }, buttons), problem);
}

// Words for a decided approval: "approved by alice: looks fine".
export function outcome(approval) {
  const by = approval.decided_by ? ` by ${approval.decided_by}` : '';
  return `${approval.status}${by}${approval.reason ? `: ${approval.reason}` : ''}`;
}
