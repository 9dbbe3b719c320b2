// Everything the console asks a server: the resource list, and the workloads through the
// gateway's URL layout /<namespace>/<agent|modelapi|mcp>/<name>/... on this same origin.
// Every failure becomes an ApiError whose message is meant for the user to read.

export const SEGMENT = { Agent: 'agent', ModelAPI: 'modelapi', MCPServer: 'mcp', Trigger: 'trigger', MemoryStore: 'memorystore' };
export const KIND_WORD = { Agent: 'agent', ModelAPI: 'model API', MCPServer: 'MCP server', Trigger: 'trigger', MemoryStore: 'memory store' };

export class ApiError extends Error {
  constructor(message, status = 0) { super(message); this.status = status; }
}

// The user's bearer token for workloads with spec.auth, entered in the page header: kept for
// this tab only (sessionStorage) and sent as Authorization to the workload paths, never to the
// console's own /_console/ API.
const TOKEN_KEY = 'kaos-console-token';

export function token() {
  try { return sessionStorage.getItem(TOKEN_KEY) || ''; } catch { return ''; }
}

export function setToken(value) {
  try {
    if (value) sessionStorage.setItem(TOKEN_KEY, value); else sessionStorage.removeItem(TOKEN_KEY);
  } catch { /* storage refused: the token is not kept */ }
}

// Set when the console signs people in (signin.js): a refused token means signing in again.
let signingIn = false;
export function useSignIn(on) { signingIn = on; }

function withToken(path, options) {
  const bearer = token();
  if (!bearer || path.startsWith('_console/')) return options;
  return { ...options, headers: { ...(options.headers || {}), Authorization: `Bearer ${bearer}` } };
}

export function url(path) {
  return new URL(path, document.baseURI).toString();
}

export function workloadPath(kind, namespace, name, rest = '') {
  return `${encodeURIComponent(namespace)}/${SEGMENT[kind]}/${encodeURIComponent(name)}${rest}`;
}

function detailOf(payload, text) {
  if (payload && typeof payload === 'object') {
    const error = payload.error;
    if (error && typeof error === 'object') return error.message || JSON.stringify(error);
    const detail = payload.detail;
    if (Array.isArray(detail)) return detail.map((d) => d.msg || JSON.stringify(d)).join('; ');
    if (detail) return typeof detail === 'string' ? detail : JSON.stringify(detail);
    if (error) return String(error);
  }
  return (text || '').trim().slice(0, 300);
}

// The grant a 403 of an agent names: 'chat', 'read', 'approve' or 'admin' from its spec.access,
// "approver" (spec.approval.approvers), "another person" (a requester deciding its own call).
export function missingGrant(detail) {
  const named = /(?:grants|needs) ('[a-z]+'(?: or '[a-z]+')*)/.exec(detail || '');
  if (named) return named[1];
  if (/not one of the approvers/.test(detail || '')) return 'approver (spec.approval.approvers)';
  if (/requester of a call cannot decide/.test(detail || '')) return 'another person must decide (you asked for this call)';
  return 'a grant of the agent\'s spec.access';
}

// Words for a failed answer: what it is, what went wrong, and the server's own reason. A 403 is
// a refusal, not a failure: "not allowed: <grant>" (the ApiError's denied), then the reason.
export async function describeFailure(response, what) {
  const text = await response.text().catch(() => '');
  let payload = null;
  try { payload = JSON.parse(text); } catch { /* not JSON */ }
  const detail = detailOf(payload, text);
  if (response.status === 403) {
    const error = new ApiError(`${what}: not allowed: ${missingGrant(detail)}${detail ? ` (${detail})` : ''}`, 403);
    error.denied = missingGrant(detail);
    return error;
  }
  const reason = {
    401: signingIn ? 'refused your sign-in (HTTP 401): it may have expired; sign in again'
      : token() ? 'refused the token (HTTP 401): enter another under Token at the top of the page'
        : 'needs a token (HTTP 401): enter one under Token at the top of the page',
    404: 'was not found', 502: 'could not be reached', 503: 'is not available right now',
    504: 'did not answer in time', 500: 'failed',
  }[response.status] || `answered HTTP ${response.status}`;
  return new ApiError(`${what} ${reason}${detail ? `: ${detail}` : '.'}`, response.status);
}

export async function request(path, what, options = {}) {
  let response;
  try {
    response = await fetch(url(path), withToken(path, options));
  } catch (error) {
    if (error.name === 'AbortError') throw error;
    throw new ApiError(`${what} could not be asked: the console's server does not answer (is it still running?).`);
  }
  if (!response.ok) throw await describeFailure(response, what);
  return response;
}

export async function getJSON(path, what, options = {}) {
  const response = await request(path, what, { headers: { accept: 'application/json' }, ...options });
  try {
    return await response.json();
  } catch {
    throw new ApiError(`${what} answered something that is not JSON.`);
  }
}

export async function postJSON(path, body, what, options = {}) {
  const response = await request(path, what, {
    method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json', ...(options.headers || {}) },
    body: JSON.stringify(body), signal: options.signal,
  });
  try {
    return { response, payload: await response.json() };
  } catch {
    throw new ApiError(`${what} answered something that is not JSON.`);
  }
}

// Server-sent events of a fetch response: yields the data of each event as a string.
export async function* serverSentEvents(response) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.search(/\r?\n\r?\n/)) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut).replace(/^\r?\n\r?\n/, '');
      const data = block.split(/\r?\n/).filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(5).replace(/^ /, '')).join('\n');
      if (data) yield data;
    }
  }
  const rest = buffer.split(/\r?\n/).filter((line) => line.startsWith('data:')).map((line) => line.slice(5).trim()).join('\n');
  if (rest) yield rest;
}

// One chat turn with an agent, streamed: onDelta(text) for every piece of the answer as it
// arrives, onApproval(approval) when a tool call waits for a person (a chunk's kaos_approval; the
// stream stays open until it is decided). The agent names the session in the X-Session-ID header
// (and in chunks' session_id).
export async function streamChat(namespace, name, text, sessionId, onDelta, signal, onApproval = () => {}) {
  const headers = { 'content-type': 'application/json', accept: 'text/event-stream' };
  if (sessionId) headers['X-Session-ID'] = sessionId;
  const body = { messages: [{ role: 'user', content: text }], stream: true };
  if (sessionId) body.session_id = sessionId;
  const response = await request(workloadPath('Agent', namespace, name, '/v1/chat/completions'),
    `The agent ${name}`, { method: 'POST', headers, body: JSON.stringify(body), signal });
  let session = response.headers.get('x-session-id') || sessionId || null;
  const type = response.headers.get('content-type') || '';
  let content = '';
  if (!type.includes('text/event-stream')) {  // an agent that does not stream: take the whole answer
    const payload = await response.json();
    content = payload?.choices?.[0]?.message?.content ?? '';
    session = payload.session_id || session;
    onDelta(content);
    return { sessionId: session, content, finished: true };
  }
  let finished = false;
  for await (const data of serverSentEvents(response)) {
    if (data === '[DONE]') { finished = true; break; }
    let chunk;
    try { chunk = JSON.parse(data); } catch { continue; }
    if (chunk.error) throw new ApiError(`The agent ${name} failed while answering: ${detailOf(chunk, data)}`);
    if (chunk.session_id) session = chunk.session_id;
    if (chunk.kaos_approval) onApproval(chunk.kaos_approval);
    const delta = chunk?.choices?.[0]?.delta?.content;
    if (delta) { content += delta; onDelta(delta); }
  }
  if (!finished) throw new ApiError(`The answer of ${name} stopped before it was complete (the connection closed).`);
  return { sessionId: session, content, finished };
}

// A minimal MCP client over streamable HTTP: initialize, then requests on the session.
export class McpClient {
  constructor(namespace, name) {
    this.path = workloadPath('MCPServer', namespace, name, '/mcp');
    this.name = name;
    this.sessionId = null;
    this.protocolVersion = '2025-06-18';
    this.nextId = 1;
    this.ready = null;
    this.initialized = false;
  }

  async post(message) {
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    if (this.sessionId) headers['mcp-session-id'] = this.sessionId;
    if (this.initialized) headers['mcp-protocol-version'] = this.protocolVersion;
    const response = await request(this.path, `The MCP server ${this.name}`,
      { method: 'POST', headers, body: JSON.stringify(message) });
    this.sessionId = response.headers.get('mcp-session-id') || this.sessionId;
    if (message.id === undefined) return null;  // a notification: nothing comes back
    const type = response.headers.get('content-type') || '';
    if (type.includes('text/event-stream')) {
      for await (const data of serverSentEvents(response)) {
        let reply;
        try { reply = JSON.parse(data); } catch { continue; }
        if (reply.id === message.id) return this.unwrap(reply);
      }
      throw new ApiError(`The MCP server ${this.name} closed the stream without answering ${message.method}.`);
    }
    return this.unwrap(await response.json());
  }

  unwrap(reply) {
    if (reply.error) throw new ApiError(`The MCP server ${this.name} refused: ${reply.error.message || JSON.stringify(reply.error)}`);
    return reply.result;
  }

  async call(method, params = {}) {
    if (!this.ready) {
      this.ready = (async () => {
        const result = await this.post({ jsonrpc: '2.0', id: this.nextId++, method: 'initialize', params: {
          protocolVersion: this.protocolVersion, capabilities: {}, clientInfo: { name: 'kaos-console', version: '0.1.0' },
        } });
        this.protocolVersion = result?.protocolVersion || this.protocolVersion;
        this.initialized = true;
        await this.post({ jsonrpc: '2.0', method: 'notifications/initialized' });
      })();
      this.ready.catch(() => { this.ready = null; this.initialized = false; this.sessionId = null; });
    }
    await this.ready;
    return this.post({ jsonrpc: '2.0', id: this.nextId++, method, params });
  }

  listTools() { return this.call('tools/list').then((result) => result?.tools || []); }

  callTool(name, args) { return this.call('tools/call', { name, arguments: args }); }
}

// The text of an MCP tool result (its content items), and whether the tool reported an error.
export function toolResultText(result) {
  const parts = (result?.content || []).map((item) => (item.type === 'text' ? item.text : JSON.stringify(item, null, 2)));
  if (!parts.length && result?.structuredContent !== undefined) parts.push(JSON.stringify(result.structuredContent, null, 2));
  return parts.join('\n');
}
