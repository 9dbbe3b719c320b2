"""The gateway's URL layout, shared by the gateway, the control plane and the CLI (pure).

``/<namespace>/<agent|modelapi|mcp>/<name>/<rest>``: the paths of the cluster's HTTPRoutes;
``/<namespace>/trigger/<name>``: a Trigger's webhook.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple

from kaos.api import KIND_OF_SEGMENT, SEGMENT_OF, TRIGGER_NAMES

DEFAULT_TIMEOUT = 300.0


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
