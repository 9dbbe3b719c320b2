"""The gateway's URL layout, shared by the gateway, the control plane and the CLI (pure).

``/<namespace>/<agent|modelapi|mcp>/<name>/<rest>``: the paths of the cluster's HTTPRoutes;
``/<namespace>/trigger/<name>``: a Trigger's webhook. Of a ModelAPI, only the paths that serve
models are routed (:data:`MODELAPI_SERVING_PATHS`), unless its spec says every path.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping, NamedTuple

from kaos.api import KIND_OF_SEGMENT, MODELAPI, SEGMENT_OF, TRIGGER_NAMES

DEFAULT_TIMEOUT = 300.0

# The paths the gateway routes to a ModelAPI (each with what lies below it, whole segments, as a
# Gateway API PathPrefix): OpenAI's chat, completions, embeddings and models, with and without
# /v1; Ollama's serving API; LiteLLM's liveness. Not the rest: LiteLLM's proxy serves its admin
# API on the same port (keys, users, config, spend, its UI, models added at run time, and more
# under /v1 itself), open when the ModelAPI has no spec.auth, and its /health calls every model
# and answers with tracebacks; Ollama's /api/pull, /api/push, /api/delete, /api/create, /api/copy
# change its models. spec.gatewayRoute.adminRoutes: true routes every path. The modelapi chart
# renders one HTTPRoute rule per path (scripts/generate writes them from this list), and a route
# takes 16 rules at most.
MODELAPI_SERVING_PATHS = (
    "/v1/chat/completions", "/v1/completions", "/v1/embeddings", "/v1/models",
    "/chat/completions", "/completions", "/embeddings", "/models",
    "/api/chat", "/api/generate", "/api/embed", "/api/tags", "/api/show", "/api/version",
    "/health/liveliness",
)
# The largest body the gateway forwards to a ModelAPI (413 beyond it; counted as it arrives).
MODELAPI_MAX_BODY_BYTES = 16 * 1024 * 1024


class Route(NamedTuple):
    namespace: str
    kind: str
    name: str
    path: str  # what the backend sees: the rest of the path, starting with "/"


@dataclass(frozen=True)
class Backend:
    """Where a route goes, or why it cannot: ``port`` None with ``status`` 404/503."""

    port: int | None
    status: int = 200
    message: str = ""
    timeout: float | None = DEFAULT_TIMEOUT
    max_body: int | None = None  # bytes; None: any size


def parse_route(path: str) -> Route | None:
    """Split a gateway path; None when it is not ``/<ns>/<agent|modelapi|mcp>/<name>[/...]``."""
    parts = path.split("/", 4)
    if len(parts) < 4 or parts[0] != "" or parts[2] not in KIND_OF_SEGMENT or not parts[1] or not parts[3]:
        return None
    rest = "/" + parts[4] if len(parts) == 5 else "/"
    return Route(parts[1], KIND_OF_SEGMENT[parts[2]], parts[3], rest)


def parse_trigger_path(path: str) -> tuple[str, str] | None:
    """(namespace, name) of a Trigger's webhook path ``/<namespace>/trigger/<name>``, else None."""
    parts = path.rstrip("/").split("/")
    if len(parts) == 4 and parts[0] == "" and parts[2] == TRIGGER_NAMES.segment and parts[1] and parts[3]:
        return parts[1], parts[3]
    return None


def modelapi_serves(path: str) -> bool:
    """Whether ``path`` is one of :data:`MODELAPI_SERVING_PATHS` or below one (never with a
    ``.`` or ``..`` segment, which a server might resolve to another path)."""
    if "/./" in path + "/" or "/../" in path + "/":
        return False
    return any(path == served or path.startswith(served + "/") for served in MODELAPI_SERVING_PATHS)


def unrouted(kind: str, spec: Mapping[str, Any], path: str) -> str | None:
    """Why the gateway does not route ``path`` to a workload of ``kind`` with ``spec``; None: it does."""
    if kind != MODELAPI or modelapi_serves(path) or (spec.get("gatewayRoute") or {}).get("adminRoutes"):
        return None
    return (f"the gateway routes only a ModelAPI's model-serving paths ({', '.join(MODELAPI_SERVING_PATHS)}), "
            f"not {path}; set spec.gatewayRoute.adminRoutes: true on the ModelAPI to route every path")


def max_body(kind: str) -> int | None:
    """The largest body the gateway forwards to a workload of ``kind`` (agents and MCP servers bound their own)."""
    return MODELAPI_MAX_BODY_BYTES if kind == MODELAPI else None


def gateway_path(namespace: str, kind: str, name: str) -> str:
    return f"/{namespace}/{SEGMENT_OF[kind]}/{name}"


_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m|h)$")
_UNIT = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def route_timeout(text: str | None) -> float | None:
    """gatewayRoute.timeout as seconds: "" -> the default, "0s" -> no timeout."""
    if not text:
        return DEFAULT_TIMEOUT
    total = 0.0
    for part in re.findall(r"\d+(?:\.\d+)?(?:ms|s|m|h)", text):
        number, unit = _DURATION.match(part).groups()
        total += float(number) * _UNIT[unit]
    return None if total == 0 else total
