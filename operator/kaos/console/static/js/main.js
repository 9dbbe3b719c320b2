// The console's router: #/ overview, #/graph, #/approvals, #/memory[/ns/agent[/session/id]],
// #/long-term[/ns/agent], #/agent/ns/name, #/mcp/ns/name, #/modelapi/ns/name, #/trigger/ns/name,
// #/memorystore/ns/name, #/audit. Each page is a module whose render(main, params)
// returns a function that stops what it started (polls, requests).

import { setToken, token, useSignIn } from './api.js';
import { h, replace } from './dom.js';
import * as store from './store.js';
import * as overview from './pages/overview.js';
import * as graph from './pages/graph.js';
import * as agent from './pages/agent.js';
import * as memory from './pages/memory.js';
import * as mcp from './pages/mcp.js';
import * as modelapi from './pages/modelapi.js';
import * as trigger from './pages/trigger.js';
import * as approvals from './pages/approvals.js';
import * as longTerm from './pages/longterm.js';
import * as memoryStore from './pages/memorystore.js';
import * as audit from './pages/audit.js';
import * as signin from './signin.js';

const ROUTES = [
  [/^#?\/?$/, overview, 'overview'],
  [/^#\/graph$/, graph, 'graph'],
  [/^#\/approvals$/, approvals, 'approvals'],
  [/^#\/audit$/, audit, 'audit'],
  [/^#\/memory(?:\/([^/]+)\/([^/]+)(?:\/session\/([^/]+))?)?$/, memory, 'memory'],
  [/^#\/long-term(?:\/([^/]+)\/([^/]+))?$/, longTerm, 'long-term'],
  [/^#\/memorystore\/([^/]+)\/([^/]+)$/, memoryStore, 'overview'],
  [/^#\/trigger\/([^/]+)\/([^/]+)$/, trigger, 'overview'],
  [/^#\/agent\/([^/]+)\/([^/]+)$/, agent, 'overview'],
  [/^#\/mcp\/([^/]+)\/([^/]+)$/, mcp, 'overview'],
  [/^#\/modelapi\/([^/]+)\/([^/]+)$/, modelapi, 'overview'],
];

const main = document.getElementById('main');
const notice = document.getElementById('notice');
const source = document.getElementById('source');
let stop = null;
let current = null;

function route() {
  const hash = location.hash;
  if (hash && !hash.startsWith('#/')) return;  // an in-page anchor (the skip link): not a page change
  if (hash === current) return;
  current = hash;
  if (stop) { try { stop(); } catch (error) { console.error(error); } stop = null; }
  const found = ROUTES.map(([pattern, page, nav]) => [hash.match(pattern), page, nav]).find(([match]) => match);
  main.replaceChildren();
  if (!found) {
    replace(main, h('h1', { tabindex: '-1' }, 'Page not found'),
      h('p', {}, 'There is no page at ', h('code', {}, hash), '. ', h('a', { href: '#/' }, 'Go to the overview'), '.'));
    focusHeading(hash);
    return;
  }
  const [match, page, nav] = found;
  for (const link of document.querySelectorAll('[data-nav]')) {
    if (link.dataset.nav === nav && (nav !== 'overview' || hash === '' || hash === '#/')) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  const params = match.slice(1).map((part) => (part === undefined ? undefined : decodeURIComponent(part)));
  try {
    stop = page.render(main, ...params) || null;
  } catch (error) {
    replace(main, h('h1', { tabindex: '-1' }, 'This page failed'), h('p', { class: 'error' }, `The console could not show this page: ${error.message}`));
  }
  focusHeading(hash);
}

function focusHeading(hash) {
  const heading = main.querySelector('h1');
  if (heading) {
    heading.setAttribute('tabindex', '-1');
    document.title = `${heading.textContent} · KAOS console`;
    if (hash) heading.focus({ preventScroll: false });
  }
}

store.subscribe((state) => {
  if (state.error) {
    notice.hidden = false;
    notice.textContent = `${state.error} The console keeps trying.`;
  } else {
    notice.hidden = true;
    notice.textContent = '';
  }
  if (state.source) {
    source.textContent = state.source === 'local'
      ? 'Local control plane (kaos up)' : `Cluster (${state.source} API)`;
  }
});

// The bearer token for guarded workloads (see api.js): set, or forgotten, from the header form.
const tokenForm = document.getElementById('token-form');
const tokenInput = document.getElementById('token');
const tokenForget = document.getElementById('token-forget');
const tokenState = document.getElementById('token-state');

function showToken() {
  const set = Boolean(token());
  tokenState.textContent = set ? 'sent to workloads' : '';
  tokenForget.hidden = !set;
  tokenInput.placeholder = set ? 'replace the token' : 'for workloads with spec.auth';
}

tokenForm.addEventListener('submit', (event) => {
  event.preventDefault();
  const value = tokenInput.value.trim().replace(/^Bearer\s+/i, '');
  if (value) setToken(value);
  tokenInput.value = '';
  showToken();
  current = null;  // show the page again, asked with the token
  route();
});
tokenForget.addEventListener('click', () => {
  setToken('');
  showToken();
  current = null;
  route();
  tokenInput.focus();
});
showToken();

// Sign-in (signin.js): when the console names an issuer, nothing is shown before a person signs
// in; then the header names them and their groups, and the token field gives way to Sign out.
const person = document.getElementById('person');

function showPerson(session) {
  person.hidden = !session;
  tokenForm.hidden = Boolean(session) || tokenForm.hidden;
  if (!session) return;
  const { user } = session;
  document.getElementById('person-name').textContent = user.name || user.subject;
  document.getElementById('person-groups').textContent = user.groups.length ? `(${user.groups.join(', ')})` : '(no groups)';
}

function signInPage(config, problem = '') {
  const button = h('button', { type: 'button', id: 'sign-in' }, 'Sign in');
  const failure = h('p', { class: 'error', role: 'alert' }, problem);
  button.addEventListener('click', () => {
    button.disabled = true;
    signin.begin(config).catch((error) => { failure.textContent = error.message; button.disabled = false; });
  });
  replace(main, h('section', { class: 'signin' },
    h('h1', { tabindex: '-1' }, 'Sign in to the KAOS console'),
    h('p', {}, 'This console shows each person what the agents let them see. Sign in with ',
      h('code', {}, config.issuer), ' to go on.'),
    failure, button));
  document.title = 'Sign in · KAOS console';
}

async function start() {
  let config = { enabled: false };
  try {
    config = await signin.configuration();
  } catch (error) {
    replace(main, h('h1', { tabindex: '-1' }, 'Sign-in is not available'), h('p', { class: 'error' }, error.message));
    return;
  }
  if (config.enabled) {
    useSignIn(true);
    tokenForm.hidden = true;
    let problem = '';
    try {
      await signin.finish();
    } catch (error) {
      problem = error.message;
    }
    const session = signin.current();
    if (!session) {
      if (!problem && signin.expired()) problem = 'Your sign-in has expired: sign in again.';
      signin.signOut();
      signInPage(config, problem);
      return;
    }
    showPerson(session);
    document.getElementById('sign-out').addEventListener('click', () => {
      // Off to the issuer's end_session_endpoint and back, or (an issuer without one) a reload:
      // nothing of the page stays running; it starts again at Sign in.
      if (!signin.signOut(config)) location.reload();
    });
  }
  window.addEventListener('hashchange', route);
  store.start();
  route();
}

start();
