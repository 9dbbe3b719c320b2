"""The console in a cluster: resources from the Kubernetes API, workloads through their Services.

:class:`KubernetesCatalog` lists agents, modelapis and mcpservers (``kaos.tools``) with the
console's own ServiceAccount (its token and CA, mounted in the pod), which needs nothing
but get/list on them, through the control side's one Kubernetes client (kaos.kube_api). :class:`ServiceProxy` serves the gateway's URL layout
(``/<namespace>/<agent|modelapi|mcp>/<name>/<rest>``) by forwarding to the workload's
``status.endpoint``, the Service URL the operator wrote (``http://agent-<name>.<ns>.svc...:8000``);
only resources the catalog lists are reached, so the console is no open proxy, and of a ModelAPI
only the paths the gateway routes (kaos.routes), with bodies up to the same bound.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from yarl import URL

from kaos.api import API_VERSION, MCPSERVER, SERVED_KINDS, SERVED_PLURALS
from kaos.console.app import JSON_HEADERS, send_json
from kaos.console.catalog import Catalog, CatalogError, key_of
from kaos.kube_api import Forbidden, KubeClient, KubeError
from kaos.proxy import Forwarder, forwarded_headers
from kaos.routes import DEFAULT_TIMEOUT, Route, gateway_path, max_body, parse_route, unrouted


class KubernetesCatalog:
    """Lists the kaos.tools resources through the Kubernetes API (cluster-wide, or in ``namespaces``)."""

    source = "kubernetes"

    def __init__(self, client: KubeClient, namespaces: tuple[str, ...] = ()):
        self.client = client
        self.namespaces = tuple(namespaces)

    @classmethod
    def connect(cls, server: str, token_file: Path | None = None, ca_file: Path | None = None,
                namespaces: tuple[str, ...] = (), timeout: float = 10.0) -> "KubernetesCatalog":
        return cls(KubeClient.connect(server, token_file, ca_file, timeout), namespaces)

    @classmethod
    def in_cluster(cls, namespaces: tuple[str, ...] = ()) -> "KubernetesCatalog":
        """The API server and credentials a pod is given (its ServiceAccount's token and CA)."""
        try:
            return cls(KubeClient.in_cluster(), namespaces)
        except KubeError as error:
            raise CatalogError(f"{error.message}; give the API server with --api-server") from None

    @property
    def server(self) -> str:
        return self.client.server

    async def aclose(self) -> None:
        await self.client.close()

    def lists(self) -> list[tuple[str, str | None]]:
        """(kind, namespace or None for every namespace) of every list call."""
        return [(kind, namespace) for namespace in (self.namespaces or (None,)) for kind in SERVED_KINDS]

    async def resources(self) -> list[dict]:
        results = await asyncio.gather(*(self._list(kind, namespace) for kind, namespace in self.lists()))
        return [item for items in results for item in items]

    async def _list(self, kind: str, namespace: str | None) -> list[dict]:
        try:
            items = await self.client.list_resources(_plural(kind), namespace)
        except Forbidden as error:
            raise CatalogError(f"the Kubernetes API refused to {error}; the console's ServiceAccount needs get and "
                               "list on agents, modelapis, mcpservers, triggers and memorystores (charts/kaos "
                               "with console.enabled grants them)") from None
        except KubeError as error:
            raise CatalogError(f"the Kubernetes API could not {error}") from None
        for item in items:  # list items may leave out what they are
            item.setdefault("apiVersion", API_VERSION)
            item.setdefault("kind", kind)
        return items


def _plural(kind: str) -> str:
    return SERVED_PLURALS[kind]


def upstream(resource: dict, rest: str) -> URL | None:
    """Where a request for ``rest`` goes: under the resource's ``status.endpoint``. An MCPServer's
    endpoint is its MCP URL itself (``<base>/mcp``, or ``spec.url``), which ``/mcp`` stands for."""
    endpoint = ((resource.get("status") or {}).get("endpoint") or "").rstrip("/")
    if not endpoint:
        return None
    if resource.get("kind") == MCPSERVER:
        if rest == "/mcp":
            return URL(endpoint)
        if endpoint.endswith("/mcp"):
            endpoint = endpoint[: -len("/mcp")]
    return URL(endpoint + rest)


class ServiceProxy:
    """ASGI handler for the workload paths: forwards to the workload's Service, streaming the answer."""

    def __init__(self, catalog: Catalog):
        self.catalog = catalog
        self.forwarder = Forwarder(error_headers=JSON_HEADERS)

    async def aclose(self) -> None:
        await self.forwarder.aclose()

    async def find(self, path: str) -> tuple[int, str, Route | None, URL | None]:
        route = parse_route(path)
        if route is None:
            return 404, "paths are /<namespace>/<agent|modelapi|mcp>/<name>/...", None, None
        try:
            items = await self.catalog.resources()
        except CatalogError as error:
            return 502, str(error), route, None
        resource = next((item for item in items if key_of(item) == (route.kind, route.namespace, route.name)), None)
        if resource is None:
            return 404, f"no {route.kind} {route.name!r} in namespace {route.namespace!r}", route, None
        why = unrouted(route.kind, resource.get("spec") or {}, route.path)
        if why is not None:
            return 404, why, route, None
        url = upstream(resource, route.path)
        if url is None:
            status = resource.get("status") or {}
            phase = status.get("phase", "Pending")
            message = status.get("message") or ""
            return 503, (f"{route.kind} {route.name} has no endpoint yet (phase {phase})"
                         f"{': ' + message if message else ''}"), route, None
        return 200, "", route, url

    async def __call__(self, scope, receive, send) -> None:
        status, detail, route, url = await self.find(scope["path"])
        if url is None:
            await send_json(send, status, {"error": "not found" if status == 404 else "unavailable", "detail": detail})
            return
        if scope["method"] not in ("GET", "HEAD", "POST", "DELETE"):
            await send_json(send, 405, {"error": f"{scope['method']} is not forwarded"})
            return
        prefix = gateway_path(route.namespace, route.kind, route.name)
        await self.forwarder.forward(scope, receive, send, url, DEFAULT_TIMEOUT, f"{route.kind} {route.name} ({url.host})",
                                     forwarded_headers(scope, prefix), max_body=max_body(route.kind))
