"""The local gateway: the cluster's HTTPRoute layout on 127.0.0.1, as a raw ASGI app.

``/<namespace>/<agent|modelapi|mcp>/<name>/<rest>`` goes to the workload's loopback port
with the prefix replaced by ``/``; bodies stream through chunk by chunk (SSE included). A
client that goes away closes the upstream connection too, so the workload stops the work.
The workload learns the address its client used from ``X-Forwarded-Proto``, ``X-Forwarded-Host``
and ``X-Forwarded-Prefix`` (the gateway sets them, replacing any the client sent), so that an
agent's cards name the gateway's URL, not its loopback port. Of a ModelAPI only the paths that
serve models are routed, with bodies up to a bound (kaos.routes; the control plane's lookup says).
"""

from __future__ import annotations

from typing import Callable

from yarl import URL

from kaos.proxy import Forwarder, forwarded_headers, send_json
from kaos.routes import Backend, Route, gateway_path, parse_route


class Gateway:
    """ASGI app; ``backend_of(route)`` says where a route goes (from the control plane's state)."""

    def __init__(self, backend_of: Callable[[Route], Backend]):
        self.backend_of = backend_of
        self.forwarder = Forwarder()

    async def aclose(self) -> None:
        await self.forwarder.aclose()

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return
        route = parse_route(scope["path"])
        if route is None:
            await send_json(send, 404, {"error": "not found", "path": scope["path"],
                                        "detail": "gateway paths are /<namespace>/<agent|modelapi|mcp>/<name>/..."})
            return
        backend = self.backend_of(route)
        if backend.port is None:
            await send_json(send, backend.status, {"error": "not found" if backend.status == 404 else "unavailable",
                                                   "detail": backend.message})
            return
        url = URL.build(scheme="http", host="127.0.0.1", port=backend.port, path=route.path, encoded=True)
        prefix = gateway_path(route.namespace, route.kind, route.name)
        await self.forwarder.forward(scope, receive, send, url, backend.timeout, f"{route.kind} {route.name}",
                                     forwarded_headers(scope, prefix), max_body=backend.max_body)
