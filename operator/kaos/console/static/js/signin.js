// Signing in with OpenID Connect (docs/local.md, "Sign-in"): the authorization-code flow with
// PKCE (S256). The tab makes the code verifier, the state and the nonce, keeps them in its
// sessionStorage while the issuer asks the person to sign in, checks the state when it comes
// back with a code, and has the console's server exchange the code (it checks the ID token and
// its nonce with PyJWT). The tokens stay in this tab's sessionStorage only: the access token is
// sent to the agents (api.js), whose spec.access decides what this person may see and do.

import { ApiError, getJSON, postJSON, setToken } from './api.js';

const PENDING_KEY = 'kaos-console-signin-pending';
const SESSION_KEY = 'kaos-console-signin';

function stored(key) {
  try { return JSON.parse(sessionStorage.getItem(key) || 'null'); } catch { return null; }
}

function store(key, value) {
  try {
    if (value) sessionStorage.setItem(key, JSON.stringify(value)); else sessionStorage.removeItem(key);
  } catch { /* storage refused: nothing is kept */ }
}

function base64url(bytes) {
  return btoa(String.fromCharCode(...new Uint8Array(bytes))).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

function randomText(size = 32) {
  return base64url(crypto.getRandomValues(new Uint8Array(size)));
}

// The page the issuer sends the person back to: this page, without query or fragment.
function redirectUri() {
  return `${location.origin}${location.pathname}`;
}

// How this console signs people in: { enabled: false } when it does not.
export async function configuration() {
  return getJSON('_console/api/signin', 'The console\'s sign-in settings');
}

// The signed-in person ({ user, expires_at, ... }) of this tab, or null (none, or expired).
export function current() {
  const session = stored(SESSION_KEY);
  if (!session || !session.access_token) return null;
  if (session.expires_at && session.expires_at * 1000 <= Date.now()) return null;
  return session;
}

export function expired() {
  const session = stored(SESSION_KEY);
  return Boolean(session && session.expires_at && session.expires_at * 1000 <= Date.now());
}

// Off to the issuer: a fresh verifier, state and nonce for this attempt; back at the same page.
export async function begin(config) {
  if (!crypto.subtle) {
    throw new ApiError('This browser offers no Web Crypto here: sign-in needs the console on https or on a loopback address.');
  }
  const verifier = randomText(48);
  const challenge = base64url(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier)));
  const pending = { state: randomText(), nonce: randomText(), verifier, redirect_uri: redirectUri(), hash: location.hash };
  store(PENDING_KEY, pending);
  const target = new URL(config.authorization_endpoint);
  const params = { response_type: 'code', client_id: config.client_id, redirect_uri: pending.redirect_uri,
    scope: config.scope, state: pending.state, nonce: pending.nonce, code_challenge: challenge,
    code_challenge_method: 'S256' };
  if (config.audience) params.audience = config.audience;
  for (const [name, value] of Object.entries(params)) target.searchParams.set(name, value);
  location.assign(target.toString());
}

// Back from the issuer (?code&state, or ?error): finish the sign-in. Returns null when this page
// load is no answer of the issuer; throws an ApiError saying why a sign-in failed.
export async function finish() {
  const query = new URLSearchParams(location.search);
  if (!query.has('state') || !(query.has('code') || query.has('error'))) return null;
  const pending = stored(PENDING_KEY);
  store(PENDING_KEY, null);
  history.replaceState(null, '', `${location.pathname}${pending?.hash || ''}`);  // the code leaves the address bar
  if (!pending || query.get('state') !== pending.state) {
    throw new ApiError('The sign-in answer does not belong to a sign-in started in this tab (its state differs): sign in again.');
  }
  if (query.has('error')) {
    throw new ApiError(`The issuer did not sign you in: ${query.get('error_description') || query.get('error')}.`);
  }
  const { payload } = await postJSON('_console/api/signin/token', {
    code: query.get('code'), code_verifier: pending.verifier, redirect_uri: pending.redirect_uri, nonce: pending.nonce,
  }, 'The sign-in');
  store(SESSION_KEY, payload);
  setToken(payload.access_token);
  return payload;
}

// Sign out of the console: this tab forgets the tokens. With ``config`` naming the issuer's
// end_session_endpoint (OpenID Connect RP-Initiated Logout), the person's session at the issuer
// ends too: the tab goes there with the ID token as id_token_hint and this page as
// post_logout_redirect_uri (registered at the issuer with the redirect URI), and the issuer sends
// it back here. Returns whether the page is leaving for the issuer.
export function signOut(config = null) {
  const session = stored(SESSION_KEY);
  store(SESSION_KEY, null);
  setToken('');
  if (!config?.end_session_endpoint || !session?.id_token) return false;
  const target = new URL(config.end_session_endpoint);
  target.searchParams.set('id_token_hint', session.id_token);
  target.searchParams.set('post_logout_redirect_uri', redirectUri());
  target.searchParams.set('client_id', config.client_id);
  location.assign(target.toString());
  return true;
}
