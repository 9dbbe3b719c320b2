"""The console's server side: one ASGI app that serves the static front end and the resource list.

Paths (``_console`` cannot be a namespace, so nothing here shadows a gateway route):

- ``GET /``: the page (``static/index.html``);
- ``GET /_console/static/<file>``: the front end's files;
- ``GET /_console/api/resources``: ``{"source", "items", "updated"}``, every resource with its
  status and the console's ``health`` ({"state", "label", "detail"}); 502 with ``{"error"}``
  in words when the catalog cannot list them;
- ``GET /_console/health``: liveness of the console itself;
- ``GET /_console/api/signin``: how the page signs people in (signin.py): ``{"enabled": false}``
  without an issuer, else the issuer's authorization endpoint, the client id, scopes, audience;
- ``POST /_console/api/signin/token``: the code exchange of a sign-in (signin.py), answering the
  tokens and the person, or ``{"error"}`` in words (400, 502).

Anything else goes to ``proxy`` (the cluster's ServiceProxy) when one is given, else 404:
under ``kaos up`` the local gateway answers the workload paths and never hands them here.
"""

from __future__ import annotations

import json
import logging
import re
import time
from importlib import resources as package_files
from typing import Awaitable, Callable

from kaos import proxy
from kaos.console.catalog import Catalog, CatalogError, Health, sort_resources
from kaos.console.signin import SignIn, SignInError

CONSOLE_PREFIX = "/_console/"
STATIC_PREFIX = CONSOLE_PREFIX + "static/"
STATIC = package_files.files("kaos.console") / "static"
_STATIC_NAME = re.compile(r"^(?:[a-z0-9_-]+/)*[a-z0-9_-]+\.(?:html|js|css|svg|png)$")
CONTENT_TYPES = {
    "html": "text/html; charset=utf-8", "js": "text/javascript; charset=utf-8", "css": "text/css; charset=utf-8",
    "svg": "image/svg+xml", "png": "image/png",
}
# Everything comes from this origin: no CDN, no inline script, nothing framed.
SECURITY_HEADERS = [
    (b"content-security-policy", b"default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
                                 b"connect-src 'self'; frame-ancestors 'none'; base-uri 'self'; form-action 'self'"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
]
log = logging.getLogger("kaos.console")

Proxy = Callable[[dict, Callable, Callable], Awaitable[None]]


JSON_HEADERS = [(b"cache-control", b"no-store"), *SECURITY_HEADERS]
SIGNIN_PATH = CONSOLE_PREFIX + "api/signin"
EXCHANGE_PATH = SIGNIN_PATH + "/token"
MAX_EXCHANGE_BYTES = 16 * 1024


async def send_json(send, status: int, payload: dict) -> None:
    await proxy.send_json(send, status, payload, JSON_HEADERS)


def static_file(name: str) -> tuple[bytes, str] | None:
    """The content and type of a file of the front end, or None (unknown names never touch the disk)."""
    if not _STATIC_NAME.match(name):
        return None
    path = STATIC.joinpath(*name.split("/"))
    if not path.is_file():
        return None
    return path.read_bytes(), CONTENT_TYPES[name.rsplit(".", 1)[1]]


class Console:
    """ASGI app of the console. ``serves(path)`` says which paths are its own (for a mount)."""

    def __init__(self, catalog: Catalog, proxy: Proxy | None = None, signin: SignIn | None = None):
        self.catalog = catalog
        self.proxy = proxy
        self.signin = signin
        self.health = Health()

    @staticmethod
    def serves(path: str) -> bool:
        return path in ("/", "/index.html") or path.startswith(CONSOLE_PREFIX)

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return
        path = scope["path"]
        if not self.serves(path):
            if self.proxy is not None:
                await self.proxy(scope, receive, send)
            else:
                await send_json(send, 404, {"error": "not found", "path": path})
            return
        if path == EXCHANGE_PATH and scope["method"] == "POST":
            await self._exchange(receive, send)
            return
        if scope["method"] not in ("GET", "HEAD"):
            await send_json(send, 405, {"error": f"{scope['method']} is not allowed on {path}"})
            return
        if path == SIGNIN_PATH:
            await self._signin(send)
        elif path == CONSOLE_PREFIX + "api/resources":
            await self._resources(send)
        elif path == CONSOLE_PREFIX + "health":
            await send_json(send, 200, {"status": "ok", "source": self.catalog.source})
        else:
            name = "index.html" if path in ("/", "/index.html") else path[len(STATIC_PREFIX):]
            found = static_file(name) if path.startswith(STATIC_PREFIX) or name == "index.html" else None
            if found is None:
                await send_json(send, 404, {"error": "not found", "path": path})
                return
            body, content_type = found
            await send({"type": "http.response.start", "status": 200, "headers": [
                (b"content-type", content_type.encode()), (b"content-length", str(len(body)).encode()),
                (b"cache-control", b"no-cache"), *SECURITY_HEADERS,
            ]})
            await send({"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else body})

    async def _signin(self, send) -> None:
        if self.signin is None:
            await send_json(send, 200, {"enabled": False})
            return
        try:
            await send_json(send, 200, await self.signin.public())
        except SignInError as error:
            await send_json(send, error.status, {"error": f"Sign-in is not available: {error}"})

    async def _exchange(self, receive, send) -> None:
        if self.signin is None:
            await send_json(send, 404, {"error": "this console signs no one in (no OIDC issuer is configured)"})
            return
        body = await proxy.read_body(receive, MAX_EXCHANGE_BYTES)
        try:
            if len(body) > MAX_EXCHANGE_BYTES:
                raise SignInError(f"a code exchange is at most {MAX_EXCHANGE_BYTES} bytes")
            try:
                request = json.loads(body)
            except ValueError:
                raise SignInError("a code exchange is a JSON object") from None
            await send_json(send, 200, await self.signin.exchange(request))
        except SignInError as error:
            await send_json(send, error.status, {"error": f"The sign-in could not be completed: {error}"})

    async def _resources(self, send) -> None:
        try:
            items = await self.catalog.resources()
        except CatalogError as error:
            await send_json(send, 502, {"error": str(error), "source": self.catalog.source})
            return
        except Exception as error:  # a bug must reach the user as words, not as a blank page
            log.exception("listing the resources failed")
            await send_json(send, 500, {"error": f"listing the resources failed: {error}", "source": self.catalog.source})
            return
        await send_json(send, 200, {
            "source": self.catalog.source,
            "items": self.health.annotate(sort_resources(items)),
            "updated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        })
