"""The OpenAPI description of ``/memory/long-term`` (routes/long_term.py), added to the agent's
document (routes/openapi.py) when long-term memory is on, as the routes themselves are."""

from __future__ import annotations

from typing import Any

from ...long_term.records import MEMORY_ID_PATTERN as ID_PATTERN
from .long_term import MAX_LIMIT, MAX_QUERY_CHARS, MAX_SEARCH_RESULTS


def _ref(name: str) -> dict:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(schema: dict, description: str) -> dict:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _error(description: str) -> dict:
    return _json(_ref("Error"), description)


def schemas() -> dict[str, Any]:
    """LongTermMemory, LongTermMemories, LongTermForgotten and LongTermStatus."""
    text = {"type": "string"}
    memory = {"type": "object", "required": ["id", "text", "created_at", "session_id", "source"],
              "description": "One memory; `distance` only in the answer to a search (`q`).",
              "properties": {"id": {"type": "string", "pattern": ID_PATTERN}, "text": text,
                             "created_at": {"type": "number", "description": "Unix time, seconds."},
                             "session_id": {"type": "string", "description": "The session it was learnt in."},
                             "source": {"type": "string", "description": "extraction or tool (remember)."},
                             "distance": {"type": "number", "description": "Cosine distance to `q` (0: same)."}}}
    scope = {"enum": ["user", "agent", "namespace"]}
    return {
        "LongTermMemory": memory,
        "LongTermMemories": {
            "type": "object", "required": ["agent", "scope", "memories", "total"],
            "properties": {"agent": text, "scope": scope, "query": {"type": "string", "description": "With `q`."},
                           "memories": {"type": "array", "items": _ref("LongTermMemory"),
                                        "description": "Newest first; with `q`, nearest first."},
                           "total": {"type": "integer", "minimum": 0,
                                     "description": "Every memory of the caller (with `q`: the hits)."}}},
        "LongTermForgotten": {
            "type": "object", "required": ["agent", "deleted", "total"],
            "properties": {"agent": text, "total": {"type": "integer", "minimum": 0},
                           "deleted": {"anyOf": [{"type": "array", "items": {"type": "string"}},
                                                 {"type": "integer", "minimum": 0}],
                                       "description": "The id forgotten (one), or how many (all)."}}},
        "LongTermStatus": {
            "type": "object", "required": ["agent", "enabled", "status"],
            "properties": {"agent": text, "enabled": {"type": "boolean"}, "status": {"enum": ["ok", "degraded"]},
                           "reason": text, "since": {"anyOf": [{"type": "number"}, {"type": "null"}]},
                           "backend": text, "store": text, "scope": scope}},
    }


UNAVAILABLE = _error("The store or the embedder cannot be reached (see `Retry-After`); the agent still answers chats.")
FORGET_REFUSED = "Or: the memories are shared (scope agent or namespace) and the caller is not an admin (AUTH_ADMINS)."
AUDITED = " Recorded in the audit trail (`memory.forgotten`, GET /audit)."
# The request guard (core/request_guard.py) wants every write to say it is JSON, a DELETE too.
IGNORED_BODY = {"required": True, "description": "Ignored: as every write, a DELETE says `Content-Type: "
                "application/json` (the request guard), with any JSON body or none.",
                "content": {"application/json": {"schema": {}}}}


def operations(write_refusals: dict, too_large: dict) -> dict[str, Any]:
    """The paths; ``write_refusals``: what the request guard answers to any write (a DELETE too),
    ``too_large``: its 413."""
    limit = {"anyOf": [{"type": "integer", "minimum": 1, "maximum": MAX_LIMIT}, {"const": ""}]}
    return {
        "/memory/long-term": {
            "get": {
                "operationId": "longTermMemories", "tags": ["memory"],
                "summary": "The caller's long-term memories, newest first; with `q`, those nearest to `q`.",
                "parameters": [
                    {"name": "q", "in": "query", "required": False, "description": "Search for this text.",
                     "schema": {"type": "string", "minLength": 1, "maxLength": MAX_QUERY_CHARS, "pattern": r"\S"}},
                    {"name": "limit", "in": "query", "required": False,
                     "description": "At most this many (absent or empty: 100; with `q`, the store's top k, "
                                    f"and at most {MAX_SEARCH_RESULTS} whatever `limit` says).",
                     "schema": limit},
                    {"name": "offset", "in": "query", "required": False,
                     "description": "Skip this many (listing only; absent or empty: 0).",
                     "schema": {"anyOf": [{"type": "integer", "minimum": 0, "maximum": 999_999_999}, {"const": ""}]}},
                ],
                "responses": {"200": _json(_ref("LongTermMemories"), "The memories."),
                              "400": _error("A bad `limit`, `offset` or `q`."), "503": UNAVAILABLE}},
            "delete": {
                "operationId": "forgetAllLongTermMemories", "tags": ["memory"],
                "summary": "Forget every memory the caller may forget (scope user: its own)." + AUDITED,
                "requestBody": IGNORED_BODY,
                "responses": {"200": _json(_ref("LongTermForgotten"), "How many were forgotten."),
                              **write_refusals, "413": too_large, "503": UNAVAILABLE}},
        },
        "/memory/long-term/{memory_id}": {"delete": {
            "operationId": "forgetLongTermMemory", "tags": ["memory"],
            "summary": "Forget one memory." + AUDITED,
            "parameters": [{"name": "memory_id", "in": "path", "required": True,
                            "schema": {"type": "string", "pattern": ID_PATTERN}}],
            "requestBody": IGNORED_BODY,
            "responses": {"200": _json(_ref("LongTermForgotten"), "Forgotten."),
                          "400": _error("Not a memory id (mem- and 32 hexadecimal digits)."),
                          **write_refusals, "413": too_large,
                          "404": _error("No memory with this id, or another caller's: the same answer."),
                          "503": UNAVAILABLE}}},
        "/memory/long-term/status": {"get": {
            "operationId": "longTermStatus", "tags": ["memory"],
            "summary": "The store and the embedder, tried now.",
            "responses": {"200": _json(_ref("LongTermStatus"), "ok or degraded, and why.")}}},
    }


def refusals(paths: dict) -> None:
    """With authentication: a shared store's forgetting is for admins (a 403 beside the guard's)."""
    for path in ("/memory/long-term", "/memory/long-term/{memory_id}"):
        responses = paths[path]["delete"]["responses"]
        responses["403"] = _error(responses["403"]["description"] + " " + FORGET_REFUSED)
