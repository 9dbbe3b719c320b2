// The entries of an Agent's agentNetwork.access: the name of an Agent in its namespace, or the
// http(s) URL of an A2A agent outside KAOS (its base URL or its card URL). The runtime names
// an A2A agent by its card's name, or, until the card is read (or when the name is taken), by
// a name derived from the URL (kaos_runtime/a2a_peer.py); delegation events carry that name.

const CARD_SUFFIXES = ['/.well-known/agent-card.json', '/.well-known/agent.json', '/.well-known/agent'];
const AUTHORITY = /^https?:\/\/(?:[^@/?#]*@)?(\[[^\]]*\]|[^:/?#]*)(?::(\d*))?([^?#]*)/i;

// True for an entry that names an A2A agent by URL (an http or https URL), false for a name.
export function isPeerUrl(entry) {
  if (typeof entry !== 'string' || !/^https?:\/\//i.test(entry)) return false;
  try {
    return ['http:', 'https:'].includes(new URL(entry).protocol);
  } catch {
    return false;
  }
}

export function splitAccess(access) {
  const entries = Array.isArray(access) ? access.filter((entry) => typeof entry === 'string') : [];
  return { names: entries.filter((entry) => !isPeerUrl(entry)), urls: [...new Set(entries.filter(isPeerUrl))] };
}

// The URL without its card path (as settings.peer_base_url).
export function baseUrl(url) {
  const trimmed = url.replace(/\/+$/, '');
  const suffix = CARD_SUFFIXES.find((end) => trimmed.endsWith(end));
  return suffix ? trimmed.slice(0, -suffix.length) : trimmed;
}

// The card the runtime reads first: the URL itself when it is a card URL, else <base>/.well-known/agent-card.json.
export function cardUrl(url) {
  const base = baseUrl(url);
  return base !== url.replace(/\/+$/, '') ? url : `${base}${CARD_SUFFIXES[0]}`;
}

function parts(url) {
  const match = AUTHORITY.exec(baseUrl(url)) || [];
  const authority = (match[1] || '').toLowerCase();
  return { authority, host: authority.replace(/^\[|\]$/g, ''), port: match[2] || '', path: match[3] || '' };
}

// The name the runtime gives an A2A agent without a card name: host, port and path, lower case,
// every run of other characters a "-" (http://127.0.0.1:9311 -> 127-0-0-1-9311).
export function derivedName(url) {
  const { host, port, path } = parts(url);
  return `${host}${port ? `:${port}` : ''}${path}`.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '') || 'a2a-agent';
}

// A short label for a URL: its host (with the port) and path.
export function hostLabel(url) {
  const { authority, port, path } = parts(url);
  return authority ? `${authority}${port ? `:${port}` : ''}${path.replace(/\/+$/, '')}` : url;
}

// What a peer name in a delegation event refers to, given the delegating agent's access list:
// { name } for a KAOS agent, { url } for an A2A agent when it can be told which one, null otherwise.
// A name that is no Agent's entry is an A2A agent's (the runtime records a delegation_request only
// for a peer it has): the URL whose derived name it is, else the only URL of the list.
export function matchPeer(access, peer) {
  if (typeof peer !== 'string' || !peer) return null;
  const { names, urls } = splitAccess(access);
  if (names.includes(peer)) return { name: peer };
  const derived = urls.filter((url) => derivedName(url) === peer);
  if (derived.length === 1) return { url: derived[0] };
  if (urls.length === 1) return { url: urls[0] };
  return null;
}
