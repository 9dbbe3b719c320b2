"""What a resource is called, where its release goes, and what it depends on."""

from __future__ import annotations

from typing import Any, Mapping, NamedTuple

from kaos.api import AGENT, CHART_OF, HELM_RELEASE_NAME_MAX, KINDS, MCPSERVER, MODELAPI

__all__ = [
    "AGENT", "CHART_OF", "HELM_RELEASE_NAME_MAX", "KINDS", "MCPSERVER", "MODELAPI",
    "Ref", "dependencies", "ref_of", "release_name",
]


class Ref(NamedTuple):
    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.kind} {self.name}"


def ref_of(resource: Mapping[str, Any]) -> Ref:
    metadata = resource.get("metadata") or {}
    return Ref(resource["kind"], metadata.get("namespace") or "default", metadata["name"])


def release_name(kind: str, name: str) -> str:
    return f"{CHART_OF[kind]}-{name}"


def dependencies(resource: Mapping[str, Any]) -> list[Ref]:
    """The ModelAPI, each MCPServer and each peer Agent an Agent names; nothing for other kinds."""
    if resource.get("kind") != AGENT:
        return []
    namespace = ref_of(resource).namespace
    spec = resource.get("spec") or {}
    refs = [Ref(MODELAPI, namespace, spec["modelAPI"])] if spec.get("modelAPI") else []
    refs += [Ref(MCPSERVER, namespace, name) for name in _unique(spec.get("mcpServers") or [])]
    access = (spec.get("agentNetwork") or {}).get("access") or []
    refs += [Ref(AGENT, namespace, name) for name in _unique(access)]
    return refs


def _unique(names: list[str]) -> list[str]:
    return list(dict.fromkeys(names))
