"""``/memory/long-term``: the caller's long-term memories (kaos_runtime.long_term).

- ``GET /memory/long-term``: the caller's memories, newest first (``limit``, ``offset``); with
  ``q``, those nearest to ``q``, nearest first (at most ``limit``, default the agent's top k,
  and at most ``MAX_SEARCH_RESULTS``);
- ``DELETE /memory/long-term/{id}``: forget one; ``DELETE /memory/long-term``: forget all;
- ``GET /memory/long-term/status``: the store and the embedder tried now (ok or degraded).

With scope ``user`` every call sees and forgets only the caller's own memories (the principal
the request acts for: core/principal.py); with scope ``agent`` or ``namespace`` the memories are
shared, and with authentication on only an admin (``AUTH_ADMINS``) may forget them. Every
forgetting is an audit event (``memory.forgotten``: core/audit.py) naming who, whose and what.
Only mounted when long-term memory is on.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response
from starlette.convertors import Convertor, register_url_convertor

from ...core.auth import acting_of
from ...long_term.records import is_memory_id
from ...long_term.service import LongTermUnavailable
from ...protocols.chat_request import BadRequest, parse_limit
from ..responses import json_response
from ..runtime import Runtime

MAX_LIMIT = 1000
# A search ranks at most this many (the top k's bound, LONG_TERM_MEMORY_TOP_K): a larger limit
# asked the SQLite store for more candidates than sqlite-vec's k allows (4096), a 503, and
# made the store look degraded to every caller.
MAX_SEARCH_RESULTS = 100
MAX_QUERY_CHARS = 2000
DEFAULT_LIMIT = 100


class _NotStatus(Convertor):
    """A path segment other than ``status``: so that ``DELETE /memory/long-term/status`` is the
    status route's method not allowed (405), not the forgetting of a memory called status."""

    regex = "(?!status$)[^/]+"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("memory_id", _NotStatus())


def router(runtime: Runtime) -> APIRouter:
    config, long_term = runtime.config, runtime.long_term
    routes = APIRouter()
    assert long_term is not None

    def owner_of(request: Request) -> str:
        return long_term.owner(acting_of(request).text)

    def may_forget(request: Request) -> None:
        who = acting_of(request)
        if long_term.scope != "user" and runtime.access.enabled and not runtime.access.is_admin(who):
            raise BadRequest(403, f"the memories of this agent are shared (scope {long_term.scope}): only an "
                                  "admin (AUTH_ADMINS) may forget them")

    def audited(request: Request, obj: str, owner: str, count: int) -> None:
        runtime.audit.record("memory.forgotten", acting_of(request).text, obj, scope=long_term.scope,
                             owner=owner, count=str(count))

    def unavailable(error: LongTermUnavailable) -> Response:
        return json_response({"detail": f"long-term memory is unavailable: {error}"}, 503,
                             headers={"Retry-After": "5"})

    async def listed(request: Request) -> Response:
        query = request.query_params
        limit = parse_limit(query.get("limit"))
        offset = query.get("offset") or "0"
        if not (offset.isascii() and offset.isdigit() and len(offset) <= 9):
            raise BadRequest(400, "offset must be a non-negative integer")
        if limit is not None and not 1 <= limit <= MAX_LIMIT:
            raise BadRequest(400, f"limit must be between 1 and {MAX_LIMIT}")
        text = query.get("q")
        if text is not None and not text.strip():
            raise BadRequest(400, "q must not be empty (leave it out to list every memory)")
        if text is not None and len(text) > MAX_QUERY_CHARS:
            raise BadRequest(400, f"q must be at most {MAX_QUERY_CHARS} characters")
        owner = owner_of(request)
        try:
            if text is not None:
                hits = await long_term.search(owner, text, min(limit or long_term.top_k, MAX_SEARCH_RESULTS))
                return json_response({"agent": config.name, "scope": long_term.scope, "query": text,
                                      "memories": [hit.public() for hit in hits], "total": len(hits)})
            records, total = await long_term.list(owner, limit or DEFAULT_LIMIT, int(offset))
        except LongTermUnavailable as error:
            return unavailable(error)
        return json_response({"agent": config.name, "scope": long_term.scope,
                              "memories": [record.public() for record in records], "total": total})

    async def forget_one(request: Request) -> Response:
        memory_id = request.path_params["memory_id"]
        if not is_memory_id(memory_id):
            raise BadRequest(400, f"{memory_id[:80]!r} is not a memory id (mem- and 32 hexadecimal digits)")
        may_forget(request)
        owner = owner_of(request)
        try:
            found = await long_term.forget(owner, memory_id)
        except LongTermUnavailable as error:
            return unavailable(error)
        if not found:  # another's or none: the same answer
            return json_response({"detail": f"no memory {memory_id}"}, 404)
        audited(request, f"memory/long-term/{memory_id}", owner, 1)
        return json_response({"agent": config.name, "deleted": [memory_id], "total": 1})

    async def forget_all(request: Request) -> Response:
        may_forget(request)
        owner = owner_of(request)
        try:
            count = await long_term.forget_all(owner)
        except LongTermUnavailable as error:
            return unavailable(error)
        audited(request, "memory/long-term", owner, count)
        return json_response({"agent": config.name, "deleted": count, "total": count})

    async def status(_: Request) -> Response:
        return json_response({"agent": config.name, **await long_term.probe()})

    async def memories(request: Request) -> Response:  # one route: a 405 names both methods
        return await (forget_all if request.method == "DELETE" else listed)(request)

    routes.add_route("/memory/long-term", memories, methods=["GET", "DELETE"])
    routes.add_route("/memory/long-term/status", status, methods=["GET"])
    routes.add_route("/memory/long-term/{memory_id:memory_id}", forget_one, methods=["DELETE"])
    return routes
