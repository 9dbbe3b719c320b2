"""Who may send a request to a server a browser can reach: its Host, its site, its body's type.

A server on 127.0.0.1 is reachable from every web page the user opens: a page may send it
requests (a form, or ``fetch`` with a ``text/plain`` body, need no CORS preflight) and, by DNS
rebinding (a name of the attacker's that resolves to 127.0.0.1), even read its answers. The
rules, checked before anything else sees the request:

1. ``Host`` must name this server: 127.0.0.1, localhost or [::1] (without a port, or with
   the server's), or a name the user allowed (``name`` likewise, ``name:port`` exactly).
   Anything else is 421: a rebinding page's requests carry its own name.
2. A request from another site is 403: ``Sec-Fetch-Site`` other than same-origin or none
   (a top-level GET navigation excepted: a link to the console from elsewhere opens it), or
   an ``Origin`` whose host and port are not the request's ``Host``.
3. A request that may change something (any method but GET, HEAD and OPTIONS) must carry
   ``Content-Type: application/json``, else 415: the types a page may send without a
   preflight are refused, whatever headers the browser adds. Exempt: paths the server names
   (a Trigger's webhook, HMAC-signed and sent by CI systems), and a DELETE without a body
   (an MCP client ending its session).

:func:`refusal` is the rule (pure); :class:`RequestGuard` applies it to an ASGI app.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Callable, Iterable

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
SAME_SITE = frozenset({"same-origin", "none"})
JSON_TYPE = "application/json"

_LABEL = r"(?!-)[a-z0-9-]{1,63}(?<!-)"
_HOST_ENTRY = re.compile(rf"^(?P<name>{_LABEL}(?:\.{_LABEL})*|\[[0-9a-f:.]+\])(?::(?P<port>[0-9]{{1,5}}))?$")


def parse_host(text: str) -> tuple[str, int | None]:
    """``name``, ``name:port``, ``[v6]`` or ``[v6]:port`` as (lower-case name, port or None);
    ValueError saying what is wrong. The form of an allowed host, and of a Host header."""
    match = _HOST_ENTRY.match(text.strip().lower())
    port = int(match["port"]) if match and match["port"] else None
    if match is None or (port is not None and not 0 < port < 65536):
        raise ValueError(f"{text!r} is not a host name, an IP address or [an IPv6 address], with an optional :port")
    return match["name"], port


@dataclass(frozen=True)
class Policy:
    """What a server accepts. ``hosts``: the allowed host entries (``name`` or ``name:port``,
    the loopback names added); None: any Host (a server behind names it cannot know).
    ``port``: the server's own port. ``any_body``: paths whose requests may carry any body
    type. ``hint``: how a user allows another name, said in the 421."""

    hosts: tuple[str, ...] | None = ()
    port: int | None = None
    any_body: Callable[[str], bool] = lambda path: False
    hint: str = ""
    _names: frozenset[str] = field(init=False, repr=False, compare=False)
    _exact: frozenset[tuple[str, int]] = field(init=False, repr=False, compare=False)
    _written: frozenset[bytes] = field(init=False, repr=False, compare=False)  # the allowed Host values as sent

    def __post_init__(self) -> None:
        entries = [parse_host(entry) for entry in (*LOOPBACK_NAMES, *(self.hosts or ()))]
        names = frozenset(name for name, port in entries if port is None)
        exact = frozenset(entry for entry in entries if entry[1] is not None)
        written = {*names, *(f"{name}:{port}" for name, port in exact)}
        if self.port is not None:
            written.update(f"{name}:{self.port}" for name in names)
        object.__setattr__(self, "_names", names)
        object.__setattr__(self, "_exact", exact)
        object.__setattr__(self, "_written", frozenset(value.encode() for value in written))

    def allows_host(self, host: bytes) -> bool:
        if self.hosts is None or host in self._written:
            return True
        try:
            name, port = parse_host(host.decode("latin-1"))
        except ValueError:
            return False
        if name in self._names and port in (None, self.port):
            return True
        return (name, port) in self._exact


@dataclass(frozen=True)
class Refusal:
    status: int
    error: str
    detail: str

    def body(self) -> bytes:
        return json.dumps({"error": self.error, "detail": self.detail}).encode()


def refusal(method: str, path: str, headers: Iterable[tuple[bytes, bytes]], policy: Policy) -> Refusal | None:
    """Why the request is refused (421, 403 or 415, in that order), or None to serve it.
    ``headers`` as ASGI gives them (lower-case names)."""
    host = origin = site = mode = content_type = None
    has_body = False
    for name, value in headers:
        if name == b"host":
            host = value
        elif name == b"origin":
            origin = value
        elif name == b"sec-fetch-site":
            site = value
        elif name == b"sec-fetch-mode":
            mode = value
        elif name == b"content-type":
            content_type = value
        elif name == b"transfer-encoding" or (name == b"content-length" and value.strip() not in (b"0", b"")):
            has_body = True
    host = host or b""
    host_text = host.decode("latin-1")
    if not policy.allows_host(host):
        allowed = ", ".join((*LOOPBACK_NAMES, *(policy.hosts or ())))
        return Refusal(421, "misdirected request",
                       f"this server does not answer to Host {host_text!r} (it answers to {allowed}: a page under "
                       f"another name may be a DNS rebinding attack){'; ' + policy.hint if policy.hint else ''}")
    changes = method not in READ_METHODS
    if site is not None and site.decode("latin-1").lower() not in SAME_SITE and not (
            not changes and method != "OPTIONS" and mode == b"navigate"):
        return Refusal(403, "cross-site request refused",
                       f"a page of another site (Sec-Fetch-Site: {site.decode('latin-1')}) may not send this request")
    if origin is not None and _authority(origin.decode("latin-1")) != host_text.lower():
        return Refusal(403, "cross-site request refused",
                       f"a page of another origin ({origin.decode('latin-1')}) may not send requests to {host_text}")
    if changes and not policy.any_body(path) and not (method == "DELETE" and not has_body and content_type is None):
        media_type = (content_type or b"").split(b";", 1)[0].strip().lower()
        if media_type != JSON_TYPE.encode():
            given = content_type.decode("latin-1") if content_type is not None else "none"
            return Refusal(415, "unsupported media type",
                           f"a {method} request must have Content-Type: {JSON_TYPE} (it had {given})")
    return None


def _authority(origin: str) -> str | None:
    """``http://host:port`` -> ``host:port`` (lower case); None for ``null`` or anything else."""
    scheme, separator, rest = origin.partition("://")
    if not separator or not scheme or "/" in rest or not rest:
        return None
    return rest.lower()


class RequestGuard:
    """ASGI middleware: a request :func:`refusal` refuses is answered with JSON
    ``{"error", "detail"}`` (and the connection closed) and never reaches ``app``."""

    def __init__(self, app, policy: Policy):
        self.app = app
        self.policy = policy

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http":
            refused = refusal(scope["method"], scope["path"], scope["headers"], self.policy)
            if refused is not None:
                body = refused.body()
                await send({"type": "http.response.start", "status": refused.status, "headers": [
                    (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close")]})  # a body it sends is not read
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)
