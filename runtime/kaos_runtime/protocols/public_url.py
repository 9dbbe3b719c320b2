"""The public base URL of a request: where its client reached this agent, for the URLs the
cards advertise.

Behind a gateway the agent sees its own address (the local gateway connects to a loopback
port) and a path without the route's prefix (``/<namespace>/agent/<name>`` is stripped). The
gateway says what the client used in the standard headers ``X-Forwarded-Proto``,
``X-Forwarded-Host`` and ``X-Forwarded-Prefix`` (the first entry of each when a chain of proxies
listed several); without them, or with a malformed one, the request's own scheme, ``Host`` and
path root stand. The headers are not checked against a list of trusted proxies: they only change
the URLs a card tells the client that sent them, never where the agent connects or what it
serves.
"""

from __future__ import annotations

import re

from starlette.requests import Request

_HOST = re.compile(r"(?:[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?")
_PREFIX = re.compile(r"(?:/[A-Za-z0-9._~!$&'()*+,;=:@%-]+)+/?")  # path segments; no "//"


def _first(value: str | None) -> str:
    return (value or "").split(",", 1)[0].strip()


def public_base_url(request: Request) -> str:
    """``<scheme>://<host>[:port]<prefix>``, without a trailing slash."""
    base = request.base_url
    proto = _first(request.headers.get("x-forwarded-proto")).lower()
    host = _first(request.headers.get("x-forwarded-host"))
    prefix = _first(request.headers.get("x-forwarded-prefix"))
    scheme = proto if proto in ("http", "https") else base.scheme
    netloc = host if _HOST.fullmatch(host) else base.netloc
    path = (prefix.rstrip("/") if _PREFIX.fullmatch(prefix) else "") + base.path.rstrip("/")
    return f"{scheme}://{netloc}{path}"
