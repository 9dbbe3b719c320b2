"""The agent's HTTP contract as OpenAPI 3.1, served at ``GET /openapi.json`` (issue 12).

The handlers are plain routes that validate by hand (docs/runtime.md, "Performance"), so
FastAPI cannot derive their schemas; this module writes them: request and response bodies of
chat completions (the JSON answer and the SSE stream), models, memory, health, readiness,
the cards and metrics, and the error bodies the handlers and the request guard return (400, 401,
403, 413, 415, 429, 503; with authentication also 404, where the ownership rules refuse:
docs/runtime.md, "Sessions").
The document is built and encoded once, when the app is created; a request for it sends
those bytes. ``tests/runtime/test_openapi.py`` runs schemathesis against a real agent with it.

``mount(app, runtime)`` replaces FastAPI's own ``/openapi.json`` (which lists none of the plain
routes) with this one.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import Response

from ...clients.peers import DEPTH_HEADER
from ...core.auth import EXEMPT_PATHS
from ...core.grants import VERBS
from ...memory import EVENT_TYPES
from ...protocols.approval_request import LISTED, MAX_REASON
from ...protocols.chat_request import INT_MAX, PROMPT_ROLES, ROLES, SESSION_HEADER, SESSION_ID_PATTERN
from . import openapi_long_term

if TYPE_CHECKING:
    from fastapi import FastAPI

OPENAPI_PATH = "/openapi.json"
OPENAPI_VERSION = "3.1.0"
CONTRACT_VERSION = "1.0.0"  # of the HTTP contract below: raised when it changes


def _ref(name: str) -> dict:
    return {"$ref": f"#/components/schemas/{name}"}


def _object(required: tuple[str, ...] = (), doc: str = "", **properties: Any) -> dict:
    """An object schema; ``doc`` is its description (``description`` may be a property)."""
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    if doc:
        schema["description"] = doc
    return schema


def _string(description: str = "", **extra: Any) -> dict:
    return {"type": "string", **({"description": description} if description else {}), **extra}


def _nullable(schema: dict) -> dict:
    return {"anyOf": [schema, {"type": "null"}]}


def _json(schema: dict, description: str, headers: dict | None = None) -> dict:
    response: dict[str, Any] = {"description": description, "content": {"application/json": {"schema": schema}}}
    if headers:
        response["headers"] = headers
    return response


def _error(description: str, headers: dict | None = None) -> dict:
    return _json(_ref("Error"), description, headers)


# A query or header integer; an empty value counts as absent.
OPTIONAL_INT = {"anyOf": [{"type": "integer", "minimum": 0, "maximum": INT_MAX}, {"const": ""}]}
RETRY_AFTER = {"Retry-After": {"description": "Seconds to wait before trying again.",
                               "schema": {"type": "string", "pattern": "^[0-9]+$"}}}
SESSION_OUT = {SESSION_HEADER: {"description": "The session of this exchange.", "schema": _string()}}
MEMORY_DOWN = _json(_ref("UnavailableError"), "The memory backend (Redis) cannot be reached; try again shortly.",
                    RETRY_AFTER)
# What core/request_guard.py answers to a write before the route sees it.
WRITE_REFUSALS = {
    "403": _error("A browser's request from another site (`Sec-Fetch-Site` other than same-origin or none, or an "
                  "`Origin` whose host is not the one the client reached)."),
    "415": _error("The `Content-Type` is not `application/json`."),
}


def _approval() -> dict:
    time_ = _string("ISO 8601, UTC.", format="date-time")
    return _object(
        ("id", "tool", "arguments", "session_id", "status", "requested_at", "expires_at", "decided_by", "reason",
         "agent"),
        "A tool call waiting for (or given) a person's decision.",
        id=_string(), tool=_string("The tool, or `delegate` for a delegation to a peer."),
        arguments={"type": "object"}, session_id=_string(), status={"enum": list(LISTED[1:])},
        requested_at=time_, expires_at=time_, decided_at=_nullable(time_),
        decided_by=_nullable(_string("The principal who decided (`key:<n>`, `user:<name>`, `key:3 via key:1` for a "
                                     "coordinator's caller, `anonymous`); null when pending or expired.")),
        reason=_string(), agent=_string("The agent whose call waits."), step={"type": "integer"},
        requester=_string("The principal the run acts for (with authentication, it may not decide the call)."),
        peer=_string("On an entry from a peer (delegation): the peer's name; decide it here as any other."))


AGENT_MODEL = _string("The agent's name (AGENT_NAME), as `/v1/models` lists it, whatever the request named.")


def _schemas() -> dict:
    usage = _object(("prompt_tokens", "completion_tokens", "total_tokens"),
                    "Tokens of every model call the request made, as the model API reported them.",
                    prompt_tokens={"type": "integer", "minimum": 0},
                    completion_tokens={"type": "integer", "minimum": 0},
                    total_tokens={"type": "integer", "minimum": 0})
    part = _object(doc="An OpenAI content part; the text of `text` parts is used, others are ignored.",
                   type=_string("Default `text`."), text=_string())
    message = _object(
        ("role",), role={"enum": list(ROLES)},
        content={"anyOf": [{"type": "string"}, {"type": "array", "items": _ref("ContentPart")}, {"type": "null"}]})
    prompt = {"type": "object", "required": ["role"], "properties": {"role": {"enum": list(PROMPT_ROLES)}}}
    chat_request = _object(
        ("messages",),
        "An OpenAI chat completions request; other OpenAI fields are accepted and ignored.",
        messages={"type": "array", "minItems": 1, "items": _ref("ChatMessage"), "contains": prompt,
                  "description": "At least one `user` (or `task-delegation`) message."},
        model=_nullable(_string("Ignored: the agent uses its own model, and the answer names the agent.")),
        stream=_nullable({"type": "boolean"}),
        stream_options=_nullable(_object(include_usage=_nullable({"type": "boolean"}))),
        session_id=_nullable(_string(f"Continue this session (the header {SESSION_HEADER} wins).",
                                     pattern=SESSION_ID_PATTERN)),
    )
    completion = _object(
        ("id", "object", "created", "model", "choices", "usage", "session_id"),
        id=_string(), object={"const": "chat.completion"}, created={"type": "integer"}, model=AGENT_MODEL,
        choices={"type": "array", "minItems": 1, "maxItems": 1, "items": _object(
            ("index", "message", "finish_reason"), index={"const": 0}, finish_reason={"const": "stop"},
            message=_object(("role", "content"), role={"const": "assistant"}, content=_string()))},
        usage=_ref("Usage"), session_id=_string(),
    )
    chunk = _object(
        ("id", "object", "created", "model", "choices"),
        "One frame of a streamed answer; the usage chunk has no choices.",
        id=_string(), object={"const": "chat.completion.chunk"}, created={"type": "integer"}, model=AGENT_MODEL,
        choices={"type": "array", "maxItems": 1, "items": _object(
            ("index", "delta", "finish_reason"), index={"const": 0},
            delta=_object(role={"const": "assistant"}, content=_string()),
            finish_reason={"enum": [None, "stop"]})},
        usage=_ref("Usage"),
    )
    stream_event = _object(
        ("data",), "One server-sent event: a chunk as JSON, or `[DONE]` last.",
        data={"type": "string", "if": {"const": "[DONE]"},
              "else": {"contentMediaType": "application/json", "contentSchema": _ref("ChatCompletionChunk")}})
    event = _object(
        ("event_id", "timestamp", "event_type", "content", "metadata"),
        event_id=_string(), timestamp=_string("ISO 8601, UTC.", format="date-time"),
        event_type=_string("One of " + ", ".join(EVENT_TYPES) + "."),
        content={"description": "Text, or an object for tool and delegation events."},
        metadata={"type": "object", "required": ["session_id"], "properties": {"session_id": _string()}},
    )
    skill = _object(("name", "description", "inputSchema"), name=_string(), description=_string(),
                    inputSchema={"type": "object"})
    return {
        "Error": _object(("detail",), detail=_string("What was wrong.")),
        "BudgetError": _object(("error",), "OpenAI's rate-limit error shape.", error=_object(
            ("message", "type", "param", "code"), message=_string(), type={"const": "budget_exceeded"},
            param={"type": "null"}, code={"const": "budget_exceeded"})),
        "UnavailableError": _object(("error",), "OpenAI's error shape, for a 503 worth retrying shortly.", error=_object(
            ("message", "type", "code"), message=_string(), type={"const": "service_unavailable"},
            code={"const": 503})),
        "Approval": _approval(),
        "Approvals": _object(("agent", "approvals", "total"), agent=_string(),
                             approvals={"type": "array", "items": _ref("Approval"), "description": "Oldest first."},
                             total={"type": "integer", "minimum": 0}),
        "Decision": _object(("decision",), decision={"enum": ["approve", "reject"]},
                            reason=_nullable(_string("Why (shown to the model when rejected).", maxLength=MAX_REASON))),
        "ApprovalConflict": _object(("detail", "approval"), detail=_string(), approval=_ref("Approval")),
        "ContentPart": part,
        "ChatMessage": message,
        "ChatRequest": chat_request,
        "Usage": usage,
        "ChatCompletion": completion,
        "ChatCompletionChunk": chunk,
        "ChatStreamEvent": stream_event,
        "ModelList": _object(("object", "data"), object={"const": "list"}, data={"type": "array", "items": _object(
            ("id", "object", "created", "owned_by"), id=_string(), object={"const": "model"},
            created={"type": "integer"}, owned_by=_string())}),
        "MemoryEvent": event,
        "MemoryEvents": _object(("agent", "events", "total"), agent=_string(),
                                events={"type": "array", "items": _ref("MemoryEvent")},
                                total={"type": "integer", "minimum": 0,
                                       "description": "Every stored event matching the filters."}),
        "Sessions": _object(("agent", "sessions", "total"), agent=_string(),
                            sessions={"type": "array", "items": _string(), "description": "Least recently active first."},
                            total={"type": "integer", "minimum": 0}),
        "AuditEvent": {"type": "object", "required": ["time", "agent", "action", "user", "object"],
                       "description": "One event of the audit trail (core/audit.py); more fields by action.",
                       "properties": {"time": _string("ISO 8601, UTC."), "agent": _string(),
                                      "action": _string("approval.approved, approval.rejected, approval.refused, "
                                                        "call.refused, memory.forgotten, admin.read."),
                                      "user": _string("The principal."), "object": _string("What it acted on.")},
                       "additionalProperties": {"type": "string"}},
        "AuditEvents": _object(("agent", "events", "total"), agent=_string(),
                               events={"type": "array", "items": _ref("AuditEvent"), "description": "Oldest first."},
                               total={"type": "integer", "minimum": 0}),
        "MyAccess": _object(
            ("agent", "principal", "groups", "authentication", "verbs"),
            "What the caller may do on this agent, by its own rules (spec.auth, spec.access, the approvers).",
            agent=_string(), principal=_string("Who the request acts for (`user:<name>`, `key:<n>`, `anonymous`)."),
            groups={"type": "array", "items": _string("`group:<name>`")},
            authentication={"type": "boolean", "description": "false: an open agent, every caller holds every verb."},
            verbs={"type": "array", "uniqueItems": True, "items": {"enum": list(VERBS)},
                   "description": "`chat` (run the agent), `read` (its memory), `approve` (decide another's "
                                  "call), `admin` (every session, the audit trail)."}),
        "Health": _object(("status", "name", "timestamp"), status={"const": "healthy"}, name=_string(),
                          timestamp={"type": "integer"}),
        "Ready": _object(("status", "name", "model_client_loaded", "tools_discovered", "peers_discovered"),
                         status={"const": "ready"}, name=_string(), model_client_loaded={"type": "boolean"},
                         tools_discovered={"type": "boolean"}, peers_discovered={"type": "boolean"}),
        "Starting": _object(("status", "name", "waiting_for"), status={"const": "starting"}, name=_string(),
                            waiting_for={"type": "array", "items": _string()}),
        "AgentCard": _object(("name", "description", "url", "skills", "capabilities"), name=_string(),
                             description=_string(), url=_string(), skills={"type": "array", "items": skill},
                             capabilities={"type": "array", "items": _string()}),
        "A2AAgentCard": _object(
            ("name", "description", "supportedInterfaces", "capabilities", "skills"),
            "The A2A agent card (a2a-sdk); see the A2A specification for every field.",
            name=_string(), description=_string(), url=_string(), protocolVersion=_string(),
            supportedInterfaces={"type": "array", "items": {"type": "object"}},
            capabilities={"type": "object"}, skills={"type": "array", "items": {"type": "object"}}),
    }


def _operations(config) -> dict:
    chat_responses = {
        "200": {
            "description": "The answer; with `stream: true` a `text/event-stream` of `chat.completion.chunk` "
                           "frames (`data: {...}`): the role, the answer's text as the model produces it, "
                           "`finish_reason: stop`, with `stream_options.include_usage` a usage chunk, then "
                           "`data: [DONE]`.",
            "headers": SESSION_OUT,
            "content": {"application/json": {"schema": _ref("ChatCompletion")},
                        "text/event-stream": {"schema": _ref("ChatStreamEvent")}},
        },
        "400": _error("Malformed JSON, a body that is not an object, bad `messages`, wrong types, "
                      f"a malformed {SESSION_HEADER}, {DEPTH_HEADER} or other KAOS header."),
        **WRITE_REFUSALS,
        "413": _error(f"The body is larger than {config.max_body_bytes} bytes (MAX_REQUEST_BODY_BYTES)."),
        "429": _json(_ref("BudgetError"), "A token budget is spent.", RETRY_AFTER),
        "503": MEMORY_DOWN,
    }
    return {
        "/v1/chat/completions": {"post": {
            "operationId": "chatCompletions", "tags": ["chat"],
            "summary": "Run the agent on a conversation (OpenAI-compatible).",
            "parameters": [
                {"name": SESSION_HEADER, "in": "header", "required": False,
                 "description": "Continue this session (wins over the body's `session_id`); empty: as if absent.",
                 "schema": _string(pattern="^$|" + SESSION_ID_PATTERN)},
                {"name": DEPTH_HEADER, "in": "header", "required": False,
                 "description": "The delegation chain's depth (set by delegating agents; absent or empty: 0).",
                 "schema": OPTIONAL_INT},
            ],
            "requestBody": {"required": True, "content": {"application/json": {"schema": _ref("ChatRequest")}}},
            "responses": chat_responses,
        }},
        "/v1/models": {"get": {
            "operationId": "listModels", "tags": ["chat"], "summary": "The one model: the agent itself.",
            "responses": {"200": _json(_ref("ModelList"), "The agent as a model.")}}},
        "/memory/events": {"get": {
            "operationId": "memoryEvents", "tags": ["memory"],
            "summary": "Recorded events, newest `limit` of those matching, oldest first.",
            "parameters": [
                {"name": "limit", "in": "query", "required": False, "description": "Absent or empty: 100.",
                 "schema": OPTIONAL_INT},
                {"name": "session_id", "in": "query", "required": False, "schema": _string()},
                {"name": "event_type", "in": "query", "required": False,
                 "schema": _string("One of " + ", ".join(EVENT_TYPES) + ".")},
            ],
            "responses": {"200": _json(_ref("MemoryEvents"), "The events."),
                          "400": _error("`limit` is not a non-negative integer."), "503": MEMORY_DOWN}}},
        "/memory/sessions": {"get": {
            "operationId": "memorySessions", "tags": ["memory"], "summary": "Session ids.",
            "responses": {"200": _json(_ref("Sessions"), "The sessions."), "503": MEMORY_DOWN}}},
        "/approvals": {"get": {
            "operationId": "listApprovals", "tags": ["approvals"],
            "summary": "Tool calls waiting for a decision (or, with `status`, decided ones), with a peer's nested.",
            "parameters": [
                {"name": "status", "in": "query", "required": False, "description": "Absent or empty: pending.",
                 "schema": {"enum": ["", *LISTED]}},
                {"name": "session_id", "in": "query", "required": False, "schema": _string()},
            ],
            "responses": {"200": _json(_ref("Approvals"), "The approvals."),
                          "400": _error("`status` is not one of " + ", ".join(LISTED) + "."), "503": MEMORY_DOWN}}},
        "/approvals/{approval_id}": {"post": {
            "operationId": "decideApproval", "tags": ["approvals"],
            "summary": "Approve or reject a waiting call.",
            "parameters": [{"name": "approval_id", "in": "path", "required": True, "schema": _string()}],
            "requestBody": {"required": True, "content": {"application/json": {"schema": _ref("Decision")}}},
            "responses": {"200": _json(_ref("Approval"), "The approval as decided."),
                          "400": _error("A body that is not a decision, or a malformed KAOS header."),
                          **WRITE_REFUSALS,
                          "404": _error("No approval with this id."),
                          "409": _json(_ref("ApprovalConflict"), "Already decided, or expired."),
                          "413": _error(f"The body is larger than {config.max_body_bytes} bytes "
                                        "(MAX_REQUEST_BODY_BYTES)."),
                          "503": MEMORY_DOWN}}},
        "/audit": {"get": {
            "operationId": "auditTrail", "tags": ["audit"],
            "summary": "This process's audit trail, the newest `limit` events (admins only with authentication).",
            "parameters": [{"name": "limit", "in": "query", "required": False, "description": "Absent or empty: all kept.",
                            "schema": OPTIONAL_INT}],
            "responses": {"200": _json(_ref("AuditEvents"), "The events."),
                          "400": _error("`limit` is not a non-negative integer.")}}},
        "/access/me": {"get": {
            "operationId": "myAccess", "tags": ["access"],
            "summary": "What the caller may do here: the verbs it holds (chat, read, approve, admin).",
            "responses": {"200": _json(_ref("MyAccess"), "The caller's principal, groups and verbs.")}}},
        "/health": {"get": {
            "operationId": "health", "tags": ["probes"], "summary": "Liveness.",
            "responses": {"200": _json(_ref("Health"), "The process serves.")}}},
        "/ready": {"get": {
            "operationId": "ready", "tags": ["probes"], "summary": "Readiness.",
            "responses": {"200": _json(_ref("Ready"), "Ready."),
                          "503": _json(_ref("Starting"), "Still starting: what it waits for.")}}},
        "/metrics": {"get": {
            "operationId": "metrics", "tags": ["probes"], "summary": "Prometheus metrics.",
            "responses": {"200": {"description": "The Prometheus text format.",
                                  "content": {"text/plain": {"schema": _string()}}}}}},
        "/.well-known/agent": {"get": {
            "operationId": "agentCard", "tags": ["cards"], "summary": "The KAOS agent card.",
            "responses": {"200": _json(_ref("AgentCard"), "The card.")}}},
        "/.well-known/agent.json": {"get": {
            "operationId": "agentCardJson", "tags": ["cards"], "summary": "The KAOS agent card.",
            "responses": {"200": _json(_ref("AgentCard"), "The card.")}}},
        "/.well-known/agent-card.json": {"get": {
            "operationId": "a2aAgentCard", "tags": ["cards"], "summary": "The A2A agent card.",
            "responses": {"200": _json(_ref("A2AAgentCard"), "The card.")}}},
        OPENAPI_PATH: {"get": {
            "operationId": "openapi", "tags": ["cards"], "summary": "This document.",
            "responses": {"200": _json({"type": "object"}, "The OpenAPI document.")}}},
    }


def build(config, auth: bool, exempt: frozenset[str] = EXEMPT_PATHS) -> dict:
    """The document for an agent with these settings; with ``auth`` every path outside ``exempt``
    declares the bearer scheme and its 401."""
    paths = _operations(config)
    if not config.metrics_enabled:  # METRICS_ENABLED=false: no /metrics
        del paths["/metrics"]
    schemas = _schemas()
    if config.long_term.enabled:  # routes/long_term.py, mounted only then
        paths.update(openapi_long_term.operations(WRITE_REFUSALS, _error(
            f"The body is larger than {config.max_body_bytes} bytes (MAX_REQUEST_BODY_BYTES).")))
        schemas.update(openapi_long_term.schemas())
    document: dict[str, Any] = {
        "openapi": OPENAPI_VERSION,
        "info": {
            "title": f"KAOS agent {config.name}", "version": CONTRACT_VERSION,
            "description": (config.description + "\n\n" if config.description else "")
            + "The HTTP contract of a KAOS agent (docs/runtime.md). Not described here: A2A JSON-RPC at "
              "`/a2a` (the A2A specification) and MCP streamable HTTP at `/mcp` (one tool that sends the "
              "agent a message).",
        },
        "paths": paths,
        "components": {"schemas": schemas},
    }
    if auth:
        document["components"]["securitySchemes"] = {"bearer": {
            "type": "http", "scheme": "bearer", "description": "An API key (AUTH_API_KEYS) or an OIDC JWT."}}
        unauthorized = _error("No token, or a wrong or expired one (see `WWW-Authenticate`).",
                              {"WWW-Authenticate": {"schema": _string()}})
        for path, item in paths.items():
            for operation in item.values():
                if path in exempt:
                    operation["security"] = []
                else:
                    operation["security"] = [{"bearer": []}]
                    operation["responses"]["401"] = unauthorized
        _refusals(paths)
        if config.long_term.enabled:
            openapi_long_term.refusals(paths)
    return document


def _refusals(paths: dict) -> None:
    """What the ownership and approver rules answer, with authentication on (core/principal.py)."""
    another = "Another caller's session, or none with this id: the same answer."
    paths["/v1/chat/completions"]["post"]["responses"]["404"] = _error(another)
    paths["/memory/events"]["get"]["responses"]["404"] = _error(f"`session_id`: {another}")
    paths["/approvals"]["get"]["responses"]["403"] = _error(
        "An anonymous caller relayed by a coordinator without authentication may not list approvals.")
    paths["/approvals/{approval_id}"]["post"]["responses"]["403"] = _error(
        "The caller may not decide this call: it asked for it, it is not one of the approvers "
        "(TOOL_APPROVAL_APPROVERS), it lacks the 'approve' grant (ACCESS_RULES), or it is anonymous; "
        "the detail says which.")
    paths["/audit"]["get"]["responses"]["403"] = _error("The caller is not an admin.")
    for path in ("/v1/chat/completions", "/memory/events", "/memory/sessions", "/approvals"):
        for operation in paths[path].values():
            operation["responses"].setdefault("403", _error(
                "spec.access (ACCESS_RULES) grants the caller none of the verbs this path needs; the detail names them."))


def mount(app: "FastAPI", runtime, auth: bool) -> None:
    """Serve the document at ``/openapi.json`` (encoded once, here) instead of FastAPI's."""
    document = build(runtime.config, auth)
    body = json.dumps(document, separators=(",", ":")).encode()
    app.router.routes[:] = [route for route in app.router.routes if getattr(route, "path", None) != OPENAPI_PATH]
    app.openapi = lambda: document

    async def openapi(_: Request) -> Response:
        return Response(body, media_type="application/json")

    app.router.add_route(OPENAPI_PATH, openapi, methods=["GET"])
