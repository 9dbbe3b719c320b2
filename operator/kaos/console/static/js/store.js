// The resource list, polled from the console's server and shared by every page.

import { ApiError, getJSON } from './api.js';

export const POLL_MS = 1000;

const listeners = new Set();
export const state = { items: [], source: '', updated: null, error: null, loaded: false };
let timer = null;

async function poll() {
  try {
    const payload = await getJSON('_console/api/resources', 'The list of resources');
    Object.assign(state, { items: payload.items || [], source: payload.source, updated: new Date(), error: null, loaded: true });
  } catch (error) {
    state.error = error instanceof ApiError ? error.message : `The list of resources could not be read: ${error.message}`;
  }
  notify();
  timer = setTimeout(poll, document.visibilityState === 'hidden' ? POLL_MS * 10 : POLL_MS);
}

export function start() {
  if (timer === null) poll();
}

// listener(state) now (when loaded) and after every poll; returns the unsubscribe function.
export function subscribe(listener) {
  listeners.add(listener);
  if (state.loaded || state.error) listener(state);
  return () => listeners.delete(listener);
}

// render(item, state) now (when loaded) and whenever the resource's status, health or spec change,
// or what also(state) returns; item is undefined while the resource is not in the list. Returns the
// unsubscribe function.
export function watch(kind, namespace, name, render, also = () => null) {
  let last = '';
  return subscribe((current) => {
    if (!current.loaded) return;
    const item = find(kind, namespace, name);
    const signature = JSON.stringify([item?.status, item?.health, item?.spec, also(current)]);
    if (signature === last) return;
    last = signature;
    render(item, current);
  });
}

export function key(item) {
  return `${item.kind}/${item.metadata?.namespace || 'default'}/${item.metadata?.name}`;
}

export function find(kind, namespace, name) {
  return state.items.find((item) => item.kind === kind && (item.metadata?.namespace || 'default') === namespace
    && item.metadata?.name === name);
}

// The Agents of `namespace` for which uses(agent) holds: those that name a resource of it.
export function agentsUsing(current, namespace, uses) {
  return current.items.filter((item) => item.kind === 'Agent' && (item.metadata?.namespace || 'default') === namespace
    && uses(item));
}

export function namespaces() {
  return [...new Set(state.items.map((item) => item.metadata?.namespace || 'default'))].sort();
}

// Every listener again with the list as it is (an agent said what a person may do there: access.js).
export function notify() {
  for (const listener of listeners) listener(state);
}

// Each page may refresh now (e.g. after an action) instead of waiting for the next poll.
export function refresh() {
  clearTimeout(timer);
  poll();
}
