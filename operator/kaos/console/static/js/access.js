// What a signed-in person may do on each agent: the agent's own answer to GET /access/me
// (docs/runtime.md), asked with the person's token through the same gateway path the pages use,
// so the agent's spec.access decides, not the console. One request per agent, bounded in time;
// an agent that does not answer is 'unknown', never hidden. ``shownTo`` is the one filter every
// page that lists agents goes through (the overview, the network graph, the agent pickers).

import { getJSON, workloadPath } from './api.js';
import * as store from './store.js';
import { current as signedIn } from './signin.js';

export const ACCESS_TIMEOUT_MS = 5000;

// { state: 'chat' | 'no-chat' | 'unknown', verbs, detail }: 'chat' when the agent would let
// this person chat with it.
export async function accessOf(namespace, name) {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), ACCESS_TIMEOUT_MS);
  try {
    const payload = await getJSON(workloadPath('Agent', namespace, name, '/access/me'),
      `The agent ${name}`, { signal: controller.signal });
    const verbs = Array.isArray(payload?.verbs) ? payload.verbs : [];
    return { state: verbs.includes('chat') ? 'chat' : 'no-chat', verbs, detail: '' };
  } catch (error) {
    const detail = error.name === 'AbortError'
      ? `The agent ${name} did not say within ${ACCESS_TIMEOUT_MS / 1000} s what you may do there.` : error.message;
    return { state: 'unknown', verbs: [], detail };
  } finally {
    clearTimeout(timer);
  }
}

// The access of each agent of ``items`` not asked yet, all at once; ``changed()`` after each answer.
// ``known``: a Map of store.key -> the access (or { state: 'asking' } while the answer is due).
function askAgents(items, keyOf, known, changed) {
  for (const item of items) {
    const key = keyOf(item);
    if (item.kind !== 'Agent' || known.has(key)) continue;
    known.set(key, { state: 'asking', verbs: [], detail: '' });
    accessOf(item.metadata?.namespace || 'default', item.metadata?.name).then((access) => {
      known.set(key, access);
      changed();
    });
  }
}

// This tab's answers, shared by every page: keyed by the person, the agent, its generation (an
// edited spec.access is asked again) and its health state (an agent that was not up yet could
// not say, so it is asked again once its state changes).
const answers = new Map();
// Not shown to a signed-in person: the agents that would refuse their chat, and those whose
// answer is still due.
const HIDDEN = ['no-chat', 'asking'];

function answerKey(item) {
  return `${signedIn()?.user?.subject || ''}|${store.key(item)}#${item.metadata?.generation}@${item.health?.state}`;
}

// What the signed-in person may do on the agent ``item`` as far as it said (undefined: not asked).
export function accessTo(item) {
  return answers.get(answerKey(item));
}

// The resources of ``items`` a person is shown: every one when no one is signed in; else every one
// but the agents that would refuse their chat or have not answered yet. Asks the agents not asked
// yet; each answer calls the store's listeners again, so every page showing agents redraws.
export function shownTo(items) {
  if (!signedIn()) return items;
  askAgents(items, answerKey, answers, store.notify);
  return items.filter((item) => !HIDDEN.includes(accessTo(item)?.state));
}
