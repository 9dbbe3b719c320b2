"""Ports and URLs of the workloads. The charts create the Services these URLs name."""

from __future__ import annotations

from typing import Any, Callable, Mapping
from urllib.parse import urlsplit

from kaos.api import namespace_of
from kaos.reconcile.hosted import OLLAMA
from kaos.reconcile.refs import CHART_OF, MCPSERVER, MODELAPI, Ref
from kaos.reconcile.specs import exposed, mcpserver_spec, modelapi_spec

EndpointOf = Callable[[str, str, str], str]

DEFAULT_PORT = 8000
OLLAMA_PORT = 11434
MCP_PATH = "/mcp"


def service_port(resource: Mapping[str, Any], settings) -> int:
    if resource.get("kind") == MODELAPI:
        modelapi = modelapi_spec(resource)
        return OLLAMA_PORT if modelapi.hosted and modelapi.engine(settings) == OLLAMA else DEFAULT_PORT
    if resource.get("kind") == MCPSERVER:
        entry = settings.mcp_runtimes.get(mcpserver_spec(resource).runtime) or {}
        return int(entry.get("port") or DEFAULT_PORT)
    return DEFAULT_PORT


def mcp_path(resource: Mapping[str, Any], settings) -> str:
    entry = settings.mcp_runtimes.get(mcpserver_spec(resource).runtime) or {}
    return entry.get("path") or MCP_PATH


def cluster_url(kind: str, namespace: str, name: str, port: int, cluster_domain: str) -> str:
    return f"http://{CHART_OF[kind]}-{name}.{namespace}.svc.{cluster_domain}:{port}"


def workload_of_url(url: str, namespace: str) -> tuple[str, str] | None:
    """The KAOS workload, as (chart, name), whose Service in ``namespace`` the URL's host names
    (``agent-helper``, ``agent-helper.team``, ``agent-helper.team.svc[.<cluster domain>]``);
    None for any other host. NetworkPolicy peers by pod label are namespace-local, hence only
    ``namespace``."""
    service, _, rest = (urlsplit(url).hostname or "").partition(".")
    labels = rest.split(".") if rest else []
    if labels and (labels[0] != namespace or (len(labels) > 1 and labels[1] != "svc")):
        return None
    for chart in CHART_OF.values():
        if service.startswith(f"{chart}-") and len(service) > len(chart) + 1:
            return chart, service[len(chart) + 1:]
    return None


def cluster_endpoint_of(settings, known: Mapping[Ref, Mapping[str, Any] | None]) -> EndpointOf:
    """endpoint_of for a cluster: the Service URL; the port comes from the object when known."""

    def endpoint_of(kind: str, namespace: str, name: str) -> str:
        resource = known.get(Ref(kind, namespace, name))
        port = service_port(resource, settings) if resource else DEFAULT_PORT
        return cluster_url(kind, namespace, name, port, settings.cluster_domain)

    return endpoint_of


def endpoint(resource: Mapping[str, Any], settings, endpoint_of: EndpointOf) -> str:
    """What status.endpoint says: a base URL, or the full MCP URL for an MCPServer."""
    kind = resource["kind"]
    metadata = resource.get("metadata") or {}
    namespace, name = namespace_of(metadata), metadata["name"]
    if kind == MCPSERVER:
        if url := mcpserver_spec(resource).url:
            return url
        return endpoint_of(kind, namespace, name).rstrip("/") + mcp_path(resource, settings)
    if not exposed(resource):
        return ""
    return endpoint_of(kind, namespace, name)
