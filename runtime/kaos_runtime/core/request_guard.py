"""``RequestGuard``: what a request must be before a runtime's server does anything with it (raw
ASGI middleware; the agent's service and ``kaos-runtime mcp``; docs/runtime.md, "What a request
must be").

A request that may change something (POST, PUT, PATCH, DELETE) is:

- refused with 403 when a browser sends it from another site: ``Sec-Fetch-Site`` (set by the
  browser, never by a page) other than ``same-origin`` or ``none``, or an ``Origin`` whose host is
  not the one the client reached (``X-Forwarded-Host`` when a proxy sets it, else ``Host``; the
  scheme is not compared, since a proxy that terminates TLS makes the request look like http).
  Clients that are not browsers send neither header;
- refused with 415 unless its ``Content-Type`` is ``application/json`` (parameters allowed).
  A page may send another site a POST without asking first (no CORS preflight) only as
  ``text/plain``, a form or multipart; a JSON one needs a preflight, which no route answers.

unless no route takes its method at its path: then the routes answer it (405, 404) as they
would any other (``router``; looked up only for a request about to be refused).

Every request, whatever its method:

- gets 400 when a header that ``header_rules`` names breaks its rule (a session id, a name, a
  number: protocols/request_headers.py), before any work;
- gets 413 when its body is larger than ``max_body_bytes``: on its ``Content-Length`` before any
  of it is read, else (a chunked body) as it is counted, never passing more than the bound on.

All of it reads the headers once; a request that passes costs a loop over its headers.
"""

from __future__ import annotations

import json
from typing import Callable, Mapping

# The methods that may change something (RFC 9110's unsafe ones); any other (GET, HEAD, OPTIONS,
# TRACE, ...) reaches the routes as it is.
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
SAME_SITE = frozenset({b"same-origin", b"none"})  # Sec-Fetch-Site values of a request that is not cross-site
JSON_TYPE = b"application/json"
# The headers the guard reads itself (the others are checked by the header rules).
READ = frozenset({b"host", b"x-forwarded-host", b"origin", b"sec-fetch-site", b"content-type", b"content-length",
                  b"transfer-encoding"})
# What a header rule says: None when the value is fine, else the problem (a 400's detail).
HeaderRule = Callable[[str], "str | None"]


async def refuse(send, status: int, detail: str) -> None:
    """A JSON error answer ``{"detail": ...}`` (the agent's error shape)."""
    body = json.dumps({"detail": detail}).encode()
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def _first(value: bytes) -> bytes:
    """The first entry of a list header (``X-Forwarded-Host: a, b``), without spaces."""
    return value.split(b",", 1)[0].strip()


def cross_site(sec_fetch_site: bytes | None, origin: bytes | None, host: bytes | None) -> str | None:
    """Why a request is cross-site (the 403's detail), or None. ``host``: the host the client
    reached (``X-Forwarded-Host``, else ``Host``)."""
    if sec_fetch_site is not None and sec_fetch_site.strip().lower() not in SAME_SITE:
        return f"cross-site request refused (Sec-Fetch-Site: {sec_fetch_site.decode('latin-1')[:40]})"
    if origin is not None:
        _, separator, origin_host = origin.strip().partition(b"://")
        if not separator or not host or origin_host.lower() != host.lower():
            return f"cross-site request refused (Origin {origin.decode('latin-1')[:100]!r} is not this server's)"
    return None


def is_json(content_type: bytes | None) -> bool:
    return content_type is not None and content_type.split(b";", 1)[0].strip().lower() == JSON_TYPE


def routed(router, scope) -> bool:
    """Whether one of the router's routes takes the request's method at its path."""
    from starlette.routing import Match

    return any(route.matches(scope)[0] == Match.FULL for route in router.routes)


class RequestGuard:
    """The ASGI middleware (see the module docstring). ``max_body_bytes`` None: no body bound
    here (the app bounds bodies itself); ``header_rules``: lower-case header name -> rule;
    ``router``: the app's (Starlette) router, whose routes say which writes exist."""

    def __init__(self, app, max_body_bytes: int | None = None,
                 header_rules: Mapping[bytes, HeaderRule] | None = None, router=None) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.header_rules = dict(header_rules or {})
        self.router = router
        self._body_limit = f"request body larger than {max_body_bytes} bytes (MAX_REQUEST_BODY_BYTES)"

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        rules, seen, bad_header = self.header_rules, {}, None
        for name, value in scope["headers"]:
            if name in READ:
                seen[name] = value
            elif bad_header is None:
                rule = rules.get(name)
                if rule is not None:
                    bad_header = rule(value.decode("latin-1"))
        if scope["method"] in WRITE_METHODS:
            reached = seen.get(b"x-forwarded-host")
            reached = _first(reached) if reached else seen.get(b"host")
            status, problem = 403, cross_site(seen.get(b"sec-fetch-site"), seen.get(b"origin"), reached)
            content_type = seen.get(b"content-type")
            if problem is None and not is_json(content_type):
                given = content_type.decode("latin-1")[:100] if content_type is not None else "none"
                status, problem = 415, f"Content-Type must be application/json (got {given})"
            if problem is not None and (self.router is None or routed(self.router, scope)):
                await refuse(send, status, problem)
                return
        if bad_header is not None:
            await refuse(send, 400, bad_header)
            return
        limit, length = self.max_body_bytes, seen.get(b"content-length")
        if limit is None:
            await self.app(scope, receive, send)
        elif length is not None:
            if length.isdigit() and int(length) > limit:
                await refuse(send, 413, self._body_limit)
                return
            await self.app(scope, receive, send)  # the server reads no more than Content-Length
        elif b"transfer-encoding" in seen:
            await self._counted(scope, receive, send, limit)
        else:
            await self.app(scope, receive, send)  # no body

    async def _counted(self, scope, receive, send, limit: int) -> None:
        """A chunked body, counted as the app reads it: past ``limit`` the app is told the client
        went away, whatever it answers is dropped, and the answer is 413."""
        size, over, started = 0, False, False

        async def counting_receive():
            nonlocal size, over
            if over:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                size += len(message.get("body", b""))
                if size > limit:
                    over = True
                    return {"type": "http.disconnect"}
            return message

        async def guarded_send(message) -> None:
            nonlocal started
            if over:
                return
            started = True
            await send(message)

        try:
            await self.app(scope, counting_receive, guarded_send)
        except Exception:
            if not over:
                raise
        if over and not started:
            await refuse(send, 413, self._body_limit)
