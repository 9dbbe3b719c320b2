"""The console in a cluster: resources from the Kubernetes API, workloads through their Services.

:class:`KubernetesCatalog` lists agents, modelapis and mcpservers (``kaos.tools``) with the
console's own ServiceAccount (its token and CA, mounted in the pod), which needs nothing
but get/list on them. :class:`ServiceProxy` serves the gateway's URL layout
(``/<namespace>/<agent|modelapi|mcp>/<name>/<rest>``) by forwarding to the workload's
``status.endpoint``, the Service URL the operator wrote (``http://agent-<name>.<ns>.svc...:8000``);
only resources the catalog lists are reached, so the console is no open proxy, and of a ModelAPI
only the paths the gateway routes (kaos.routes), with bodies up to the same bound.
"""

from __future__ import annotations

import asyncio
import os
import ssl
from pathlib import Path
from urllib.parse import quote

import aiohttp
from yarl import URL

from kaos.api import API_VERSION, MCPSERVER, SERVED_KINDS, SERVED_PLURALS
from kaos.console.app import JSON_HEADERS, send_json
from kaos.console.catalog import Catalog, CatalogError, key_of
from kaos.proxy import Forwarder, forwarded_headers
from kaos.routes import DEFAULT_TIMEOUT, Route, gateway_path, max_body, parse_route, unrouted

SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")


class KubernetesCatalog:
    """Lists the kaos.tools resources through the Kubernetes API (cluster-wide, or in ``namespaces``)."""

    source = "kubernetes"

    def __init__(self, server: str, token_file: Path | None = None, ca_file: Path | None = None,
                 namespaces: tuple[str, ...] = (), timeout: float = 10.0):
        self.server = server.rstrip("/")
        self.token_file = token_file
        self.ca_file = ca_file
        self.namespaces = tuple(namespaces)
        self.timeout = timeout
        self._session: aiohttp.ClientSession | None = None

    @classmethod
    def in_cluster(cls, namespaces: tuple[str, ...] = ()) -> "KubernetesCatalog":
        """The API server and credentials a pod is given (its ServiceAccount's token and CA)."""
        host, port = os.environ.get("KUBERNETES_SERVICE_HOST"), os.environ.get("KUBERNETES_SERVICE_PORT", "443")
        if not host:
            raise CatalogError("not running in a Kubernetes pod (KUBERNETES_SERVICE_HOST is unset); "
                               "give the API server with --api-server")
        host = f"[{host}]" if ":" in host else host
        return cls(f"https://{host}:{port}", SERVICE_ACCOUNT_DIR / "token", SERVICE_ACCOUNT_DIR / "ca.crt", namespaces)

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            context = ssl.create_default_context(cafile=str(self.ca_file)) if self.ca_file else None
            self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=context) if context else None)
        return self._session

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()

    def _headers(self) -> dict[str, str]:
        headers = {"Accept": "application/json"}
        if self.token_file is not None:
            try:  # read every time: the kubelet rotates projected tokens
                headers["Authorization"] = "Bearer " + self.token_file.read_text().strip()
            except OSError as error:
                raise CatalogError(f"cannot read the ServiceAccount token {self.token_file}: {error.strerror}") from None
        return headers

    def paths(self) -> list[tuple[str, str]]:
        """(kind, API path) of every list call."""
        base = f"/apis/{API_VERSION}"
        if not self.namespaces:
            return [(kind, f"{base}/{_plural(kind)}") for kind in SERVED_KINDS]
        return [(kind, f"{base}/namespaces/{quote(ns)}/{_plural(kind)}") for ns in self.namespaces for kind in SERVED_KINDS]

    async def resources(self) -> list[dict]:
        results = await asyncio.gather(*(self._list(kind, path) for kind, path in self.paths()))
        return [item for items in results for item in items]

    async def _list(self, kind: str, path: str) -> list[dict]:
        what = f"{_plural(kind)}.{API_VERSION.split('/')[0]}"
        try:
            async with self.session.get(self.server + path, headers=self._headers(),
                                        timeout=aiohttp.ClientTimeout(total=self.timeout)) as response:
                if response.status >= 400:
                    text = await response.text()
                    try:
                        message = (await response.json(content_type=None)).get("message") or text
                    except ValueError:
                        message = text
                    hint = ("; the console's ServiceAccount needs get and list on agents, modelapis, mcpservers, triggers "
                            "and memorystores (charts/kaos with console.enabled grants them)") if response.status in (401, 403) else ""
                    raise CatalogError(f"the Kubernetes API refused to list {what} "
                                       f"({response.status} {response.reason}): {message.strip()}{hint}")
                body = await response.json(content_type=None)
        except aiohttp.ClientError as error:
            raise CatalogError(f"cannot reach the Kubernetes API at {self.server}: {error}") from None
        except asyncio.TimeoutError:
            raise CatalogError(f"the Kubernetes API at {self.server} did not answer within {self.timeout:g}s") from None
        items = body.get("items") or []
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
